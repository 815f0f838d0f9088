import { Admin, compatibilityPartitioner, Producer, type BaseOptions, type MessageToProduce } from '@platformatic/kafka';
import type { Logger } from '../observability/logger.ts';
import { withTimeout } from '../time.ts';
import type { BusHealth, OutgoingMessage } from './bus.ts';
import { EventBusUnavailableError } from './errors.ts';
import { createRefusalTracker, type KafkaSecurity } from './kafka-security.ts';
import { kafkaRootCause } from './kafka-util.ts';

/**
 * The @platformatic/kafka bus's shared producer and admin client (platformatic-bus.ts), as
 * kafka-clients.ts is kafkajs's: created on first use, replaced after a failure, and the brokers'
 * refusal of this replica's credentials, which /health/ready reports. Its clients connect lazily:
 * a producer "connects" by initialising its idempotent producer id, an admin by reading metadata.
 */

/** The connection options every client of the bus shares. */
export interface PlatformaticConnection {
  clientId: string;
  brokers: readonly string[];
  connectionTimeoutMs: number;
  requestTimeoutMs: number;
  security: KafkaSecurity | undefined;
}

/**
 * Options for a client of this connection. Retries kept short, as for kafkajs: the outbox publisher
 * and the consumer runner do their own retrying, so a dead broker must fail fast.
 */
export function baseOptions(c: PlatformaticConnection): BaseOptions {
  const s = c.security;
  const sasl = s?.sasl && 'username' in s.sasl ? s.sasl : undefined;
  return {
    clientId: c.clientId,
    bootstrapBrokers: [...c.brokers],
    connectTimeout: c.connectionTimeoutMs,
    requestTimeout: c.requestTimeoutMs,
    timeout: c.requestTimeoutMs,
    retries: 3,
    retryDelay: 100,
    ...(s?.ssl ? { tls: s.ssl === true ? {} : s.ssl } : {}),
    ...(sasl ? { sasl: { mechanism: sasl.mechanism.toUpperCase() as 'PLAIN', username: sasl.username, password: sasl.password } } : {}),
  };
}

/** An idempotent producer: acks=all, one request in flight, Java's murmur2 partitions (the same as kafkajs's DefaultPartitioner). */
export function newProducer(c: PlatformaticConnection, transactionalId?: string): Producer {
  return new Producer({
    ...baseOptions(c),
    idempotent: true,
    // The library sets an idempotent producer's retries to "forever" when given ≤ 1; 3 as above.
    retries: 3,
    partitioner: compatibilityPartitioner,
    // "No producer yet" is -1/-1 in InitProducerId; the library's default 0/0 makes the broker answer
    // PRODUCER_FENCED to a second producer of a transactional.id, so a takeover could never fence anyone.
    producerId: -1n,
    producerEpoch: -1,
    ...(transactionalId ? { transactionalId } : {}),
  });
}

const bytes = (v: string | Buffer): Buffer => (typeof v === 'string' ? Buffer.from(v) : v);

/** The bus's messages as the library sends them: Buffers throughout (its serialisers are the identity). */
export function toRecords(messages: readonly OutgoingMessage[]): MessageToProduce[] {
  return messages.map((m) => {
    // A Map of Buffers: header names given as an object's string keys reach the encoder unconverted.
    const headers = new Map<Buffer, Buffer>();
    for (const [name, value] of Object.entries(m.headers)) headers.set(Buffer.from(name), bytes(value));
    return {
      topic: m.topic,
      ...(m.key === null ? {} : { key: bytes(m.key) }),
      // A null value (a tombstone) is sent as no value.
      value: (m.value === null ? undefined : bytes(m.value)) as Buffer,
      headers,
    };
  });
}

/** Closes a client: a producer or consumer at once (force: no waiting for its streams); the admin's close takes no force flag. */
export function closeClient(x: Producer | Admin): Promise<void> {
  return x instanceof Admin ? x.close() : x.close(true);
}

export interface PlatformaticClients {
  producer(): Promise<Producer>;
  retireProducer(p: Promise<Producer>): void;
  admin(): Promise<Admin>;
  resetAdmin(): void;
  connectFailed(err: unknown): void;
  refusal(): string | undefined;
  health(timeoutMs: number): Promise<BusHealth>;
  close(waitMs: number): Promise<void>;
}

export function createPlatformaticClients(c: PlatformaticConnection, log: Logger): PlatformaticClients {
  const refusals = createRefusalTracker(c.security, log);
  const connectSucceeded = refusals.succeeded;
  const connectFailed = refusals.failed;
  let producer: Promise<Producer> | undefined;
  let admin: Promise<Admin> | undefined;
  let closed = false;

  /** A client whose first request succeeded, or a rejection after which the next call makes a new one. */
  function connected<T extends Producer | Admin>(client: T, first: (x: T) => Promise<unknown>, what: string, forget: (p: Promise<T>) => void): Promise<T> {
    const created: Promise<T> = first(client).then(
      () => {
        connectSucceeded();
        return client;
      },
      async (err: unknown) => {
        connectFailed(err);
        forget(created);
        await closeClient(client).catch(() => undefined);
        throw new EventBusUnavailableError(`kafka ${what} cannot connect: ${(kafkaRootCause(err) as Error).message}`, { cause: err });
      },
    );
    return created;
  }
  const close = (p: Promise<Producer | Admin> | undefined) => void p?.then(closeClient).catch(() => undefined);

  return {
    producer() {
      if (closed) return Promise.reject(new EventBusUnavailableError('event bus stopped'));
      producer ??= connected(newProducer(c), (p) => p.initIdempotentProducer({}), 'producer', (p) => {
        if (producer === p) producer = undefined;
      });
      return producer;
    },
    // As with kafkajs: after a failed send the sequence numbers are unknown; a fresh producer gets a new id.
    retireProducer(p) {
      if (producer === p) producer = undefined;
      close(p);
    },
    admin() {
      admin ??= connected(new Admin(baseOptions(c)), (a) => a.metadata({ topics: [], forceUpdate: true }), 'admin', (p) => {
        if (admin === p) admin = undefined;
      });
      return admin;
    },
    resetAdmin() {
      const a = admin;
      admin = undefined;
      close(a);
    },
    connectFailed,
    refusal: refusals.refusal,
    async health(timeoutMs) {
      try {
        await withTimeout(this.admin().then((a) => a.metadata({ topics: [], forceUpdate: true })), timeoutMs, 'kafka health check');
        return 'ok';
      } catch {
        this.resetAdmin();
        return 'down';
      }
    },
    async close(waitMs) {
      closed = true;
      const clients = [producer, admin];
      producer = admin = undefined;
      await Promise.all(
        clients.map((p) => (p ? withTimeout(p.then(closeClient), waitMs, 'kafka client close').catch(() => undefined) : undefined)),
      );
    },
  };
}
