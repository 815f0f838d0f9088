import type { Admin, Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import type { IncomingMessage, TopicReader } from './bus.ts';
import { EventBusUnavailableError } from './errors.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';

/**
 * A one-off read of a whole topic for runbook replays: a consumer in a throwaway group of its own
 * (nothing committed, the group deleted on close), so the product consumers' offsets and inboxes
 * are not touched. kafkajs has no manual partition assignment, hence the group.
 */

export interface KafkaTopicReaderOptions {
  kafka: Kafka;
  admin: () => Promise<Admin>;
  /** Physical topic. */
  topic: string;
  /** A group nobody else uses (e.g. with a random suffix): it starts from the earliest offsets. */
  groupId: string;
  log: Logger;
  maxWaitTimeInMs?: number;
}

export async function openKafkaTopicReader(opts: KafkaTopicReaderOptions): Promise<TopicReader> {
  const { topic, groupId } = opts;
  const log = opts.log.child({ topic, groupId, component: 'topic-reader' });
  /** Next offset to read per partition (what the consumer has handed over so far). */
  const position = new Map<number, bigint>();
  /** Next offset not yet taken per partition (taken records may still be on their way to the sink). */
  const claimed = new Map<number, bigint>();
  let sink: ((messages: IncomingMessage[]) => Promise<void>) | undefined;
  /** What arrived while no readToEnd was running (the caller applying the last pass): handed to the next. */
  let held: IncomingMessage[] = [];
  let failure: unknown;
  let progressed = () => {};

  const consumer: Consumer = opts.kafka.consumer({ groupId, maxWaitTimeInMs: opts.maxWaitTimeInMs ?? EVENTS_DEFAULTS.kafkaFetchMaxWaitMs, allowAutoTopicCreation: false });
  consumer.on(consumer.events.CRASH, (e) => {
    failure = e.payload.error;
    progressed();
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat }) => {
        // A rebalance of the throwaway group starts its partitions over from the earliest offset
        // (nothing is committed): each record is taken once, by this claim made before any await, so
        // a re-read batch is skipped even while an earlier one is still with the sink.
        const from = claimed.get(batch.partition) ?? 0n;
        const next = BigInt(batch.lastOffset()) + 1n;
        if (next > from) claimed.set(batch.partition, next);
        const messages: IncomingMessage[] = batch.messages
          .filter((m) => BigInt(m.offset) >= from)
          .map((m) => ({
            topic,
            partition: batch.partition,
            offset: m.offset,
            key: m.key ?? null,
            value: m.value ?? null,
            headers: m.headers ?? {},
            timestamp: m.timestamp,
          }));
        // Handed over before the position moves: readToEnd returns only once its sink has them.
        if (messages.length > 0) {
          if (sink) await sink(messages);
          else held.push(...messages);
        }
        if (next > (position.get(batch.partition) ?? 0n)) position.set(batch.partition, next);
        await heartbeat();
        progressed();
      },
    });
  } catch (err) {
    await consumer.disconnect().catch(() => undefined);
    throw new EventBusUnavailableError(`cannot read ${topic}: ${(err as Error).message}`, { cause: err });
  }

  /** Partitions whose end (offset after the last record) is beyond what was read. */
  const behind = (ends: Map<number, bigint>) => [...ends].filter(([p, end]) => (position.get(p) ?? 0n) < end);

  return {
    async readToEnd(onMessages) {
      const offsets = await opts
        .admin()
        .then((a) => a.fetchTopicOffsets(topic))
        .catch((err: unknown) => {
          throw err instanceof EventBusUnavailableError ? err : new EventBusUnavailableError(`cannot read the end offsets of ${topic}: ${(err as Error).message}`, { cause: err });
        });
      // An empty partition (end = low) has nothing to wait for; for the others, their end now.
      const ends = new Map(offsets.filter((o) => o.high !== o.low).map((o) => [o.partition, BigInt(o.high)]));
      sink = async (messages) => onMessages(messages);
      try {
        if (held.length > 0) {
          const earlier = held;
          held = [];
          await onMessages(earlier);
        }
        let lastMoved = Date.now();
        let lastLeft = -1n;
        for (;;) {
          if (failure !== undefined) throw new EventBusUnavailableError(`reading ${topic} failed: ${(failure as Error).message}`, { cause: failure });
          const left = behind(ends).reduce((sum, [p, end]) => sum + end - (position.get(p) ?? 0n), 0n);
          if (left === 0n) return;
          if (left !== lastLeft) [lastLeft, lastMoved] = [left, Date.now()];
          else if (Date.now() - lastMoved > EVENTS_DEFAULTS.kafkaTopicReaderStallMs) {
            throw new EventBusUnavailableError(`reading ${topic} made no progress for ${EVENTS_DEFAULTS.kafkaTopicReaderStallMs} ms (${left} records behind)`);
          }
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 250);
            progressed = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        }
      } finally {
        sink = undefined;
      }
    },
    async close() {
      await consumer.disconnect().catch((err: unknown) => log.warn({ err }, 'topic reader disconnect failed'));
      // The group committed nothing; deleting it keeps the broker's group list clean.
      await opts
        .admin()
        .then((a) => a.deleteGroups([groupId]))
        .catch((err: unknown) => log.info({ err }, 'throwaway consumer group not deleted (the broker expires it)'));
    },
  };
}
