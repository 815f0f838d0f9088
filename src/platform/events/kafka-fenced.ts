import { CompressionTypes, Partitioners, type Kafka, type Producer, type Transaction } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import { withTimeout } from '../time.ts';
import type { FencedPublisher, OutgoingMessage } from './bus.ts';
import { EventBusFencedError, EventBusUnavailableError } from './errors.ts';
import { byTopic, chunkByBytes, isKafkaUnreachable, kafkaErrorTypes } from './kafka-util.ts';

/**
 * A single-runner publisher's sends, fenced by Kafka itself: one transactional producer whose
 * transactional.id is the same on every replica. Each publish is one transaction (send, commit). A
 * producer's first transaction initialises the id (InitProducerId), which gives it a newer epoch and
 * makes the coordinator abort whatever an older producer of the id left open; from then on the broker
 * refuses the older producer's sends and commit. A publisher that takes the lock over calls reset(),
 * so its next publish initialises a fresh producer before anything is sent: a frozen old holder's
 * records, sent before or after it wakes, are then refused or aborted, and read-committed consumers
 * (kafkajs's default) never see them after the new holder's. A client-side timeout cannot let a late
 * append through either: it lands, if at all, in an aborted transaction.
 */

/** Protocol errors meaning "a newer producer of this transactional.id exists". */
const FENCED = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'INVALID_PRODUCER_ID_MAPPING']);

/** Either client's refusal of a fenced producer (kafka-util.ts's kafkaErrorTypes reads both). */
export function isFenced(err: unknown): boolean {
  for (const t of kafkaErrorTypes(err)) if (FENCED.has(t)) return true;
  return false;
}

export function createKafkaFencedPublisher(o: {
  kafka: Kafka;
  transactionalId: string;
  requestTimeoutMs: number;
  maxRequestBytes: number;
  log: Logger;
  /** False once the bus stops: no more sends. */
  open(): boolean;
}): FencedPublisher & { stop(): Promise<void> } {
  let producer: Promise<Producer> | undefined;

  function current(): Promise<Producer> {
    if (!o.open()) return Promise.reject(new EventBusUnavailableError('event bus stopped'));
    if (producer) return producer;
    const p = o.kafka.producer({
      transactionalId: o.transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner, // murmur2, same partition as Java clients
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 2000 },
    });
    const created: Promise<Producer> = p.connect().then(
      () => p,
      async (err: unknown) => {
        if (producer === created) producer = undefined;
        await p.disconnect().catch(() => undefined);
        throw new EventBusUnavailableError(`kafka producer cannot connect: ${(err as Error).message}`, { cause: err });
      },
    );
    producer = created;
    return created;
  }

  /** After a failure the producer's transaction state is unknown: the next publish starts a new one. */
  function retire(p: Promise<Producer> | undefined): void {
    if (!p) return;
    if (producer === p) producer = undefined;
    void p.then((x) => x.disconnect()).catch(() => undefined);
  }

  return {
    transactionalId: o.transactionalId,
    reset: () => retire(producer),
    async publish(messages: readonly OutgoingMessage[]) {
      if (messages.length === 0) return;
      const pending = current();
      const p = await pending;
      let tx: Transaction | undefined;
      try {
        tx = await p.transaction();
        for (const chunk of chunkByBytes(messages, o.maxRequestBytes)) {
          await tx.sendBatch({ topicMessages: byTopic(chunk), acks: -1, compression: CompressionTypes.None, timeout: o.requestTimeoutMs });
        }
        await tx.commit();
      } catch (err) {
        if (tx?.isActive()) await withTimeout(tx.abort(), o.requestTimeoutMs, 'kafka transaction abort').catch(() => undefined);
        retire(pending);
        if (isFenced(err)) {
          o.log.warn({ transactionalId: o.transactionalId, err: (err as Error).message }, 'kafka fenced this publisher: another replica took it over');
          throw new EventBusFencedError(`kafka fenced the publisher ${o.transactionalId}: ${(err as Error).message}`, { cause: err });
        }
        if (isKafkaUnreachable(err)) throw new EventBusUnavailableError(`kafka unreachable: ${(err as Error).message}`, { cause: err });
        throw err;
      }
    },
    async stop() {
      const p = producer;
      producer = undefined;
      if (p) await withTimeout(p.then((x) => x.disconnect()), 2000, 'kafka fenced producer disconnect').catch(() => undefined);
    },
  };
}
