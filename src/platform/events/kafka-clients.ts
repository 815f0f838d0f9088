import { Partitioners, type Admin, type Kafka, type Producer } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import { withTimeout } from '../time.ts';
import type { BusHealth } from './bus.ts';
import { EventBusUnavailableError } from './errors.ts';
import { createRefusalTracker, type KafkaSecurity } from './kafka-security.ts';

/**
 * The Kafka bus's shared producer and admin client (kafka-bus.ts): connected on first use, replaced
 * after a failure, and the brokers' refusal of this replica's credentials — set by a connect they
 * refused, cleared by the next that succeeds — which /health/ready reports.
 */
export interface KafkaClients {
  producer(): Promise<Producer>;
  /** Drops a producer whose send failed (see retire below); the next send connects a fresh one. */
  retireProducer(p: Promise<Producer>): void;
  admin(): Promise<Admin>;
  /** Drops the admin client; the next use connects a fresh one. */
  resetAdmin(): void;
  /** Call with any error of a consumer's connect: a credential refusal is remembered and logged once. */
  connectFailed(err: unknown): void;
  /** The brokers' refusal of this replica's credentials, undefined while they accept them. */
  refusal(): string | undefined;
  /** 'ok' when the cluster answers within `timeoutMs`; else 'down', and the next check starts from a fresh admin connection. */
  health(timeoutMs: number): Promise<BusHealth>;
  /** No more producers; the producer and admin disconnect, waiting at most `waitMs` for each. */
  close(waitMs: number): Promise<void>;
}

export function createKafkaClients(kafka: Kafka, security: KafkaSecurity | undefined, log: Logger): KafkaClients {
  const refusals = createRefusalTracker(security, log);
  const connectSucceeded = refusals.succeeded;
  const connectFailed = refusals.failed;
  let producer: Promise<Producer> | undefined;
  let admin: Promise<Admin> | undefined;
  let closed = false;

  return {
    producer() {
      if (closed) return Promise.reject(new EventBusUnavailableError('event bus stopped'));
      if (producer) return producer;
      const p = kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        createPartitioner: Partitioners.DefaultPartitioner, // murmur2, same partition as Java clients
        retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 2000 },
      });
      const created: Promise<Producer> = p.connect().then(
        () => {
          connectSucceeded();
          return p;
        },
        async (err: unknown) => {
          connectFailed(err);
          if (producer === created) producer = undefined;
          await p.disconnect().catch(() => undefined);
          throw new EventBusUnavailableError(`kafka producer cannot connect: ${(err as Error).message}`, { cause: err });
        },
      );
      producer = created;
      return created;
    },

    // After a failed send kafkajs has rolled back the idempotent sequence numbers of every partition
    // in the request, including partitions the broker did accept; reusing the producer would then
    // hit OUT_OF_ORDER_SEQUENCE_NUMBER forever. A fresh producer gets a new producer id.
    retireProducer(p) {
      if (producer === p) producer = undefined;
      void p.then((x) => x.disconnect()).catch(() => undefined);
    },

    admin() {
      if (admin) return admin;
      const a = kafka.admin();
      const created: Promise<Admin> = a.connect().then(
        () => {
          connectSucceeded();
          return a;
        },
        (err: unknown) => {
          connectFailed(err);
          if (admin === created) admin = undefined;
          throw new EventBusUnavailableError(`kafka admin cannot connect: ${(err as Error).message}`, { cause: err });
        },
      );
      admin = created;
      return created;
    },

    resetAdmin() {
      const a = admin;
      admin = undefined;
      void a?.then((x) => x.disconnect()).catch(() => undefined);
    },

    connectFailed,
    refusal: refusals.refusal,

    async health(timeoutMs) {
      try {
        await withTimeout(this.admin().then((a) => a.describeCluster()), timeoutMs, 'kafka health check');
        return 'ok';
      } catch {
        this.resetAdmin();
        return 'down';
      }
    },

    async close(waitMs) {
      closed = true;
      const p = producer;
      producer = undefined;
      const a = admin;
      admin = undefined;
      // A connect still in flight to a silent broker can take retries × requestTimeout: shutdown
      // does not wait for it (the process is about to exit; the half-open socket dies with it).
      const disconnect = (c: Promise<Producer | Admin> | undefined, what: string) =>
        c ? withTimeout(c.then((x) => x.disconnect()), waitMs, `kafka ${what} disconnect`).catch(() => undefined) : undefined;
      await Promise.all([disconnect(p, 'producer'), disconnect(a, 'admin')]);
    },
  };
}
