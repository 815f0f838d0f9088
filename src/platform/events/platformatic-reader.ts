import { EVENTS_DEFAULTS } from './defaults.ts';
import { Consumer, type Admin, type Message, type MessagesStream } from '@platformatic/kafka';
import type { Logger } from '../observability/logger.ts';
import type { IncomingMessage, TopicReader } from './bus.ts';
import { EventBusUnavailableError } from './errors.ts';
import { kafkaFetchDefaults } from './kafka-consumer.ts';
import { baseOptions, type PlatformaticConnection } from './platformatic-clients.ts';
import { topicOffsets } from './platformatic-admin.ts';
import { GROUP_PROTOCOLS } from './platformatic-consumer.ts';

/**
 * kafka-topic-reader.ts on @platformatic/kafka: a whole-topic read for runbook replays by a member of
 * a throwaway group (nothing committed, the group deleted on close), read committed from the earliest offsets.
 */

/** How long readToEnd waits without any partition moving towards its end before giving up. */
const STALL_TIMEOUT_MS = EVENTS_DEFAULTS.platformaticReaderStallMs;

export async function openPlatformaticTopicReader(opts: {
  connection: PlatformaticConnection;
  admin: () => Promise<Admin>;
  topic: string;
  groupId: string;
  log: Logger;
  maxWaitTimeInMs?: number;
}): Promise<TopicReader> {
  const { topic, groupId } = opts;
  const log = opts.log.child({ topic, groupId, component: 'topic-reader' });
  /** Next offset handed over per partition; below it a record is a re-read after a rebalance. */
  const position = new Map<number, bigint>();
  let sink: ((messages: IncomingMessage[]) => Promise<void>) | undefined;
  let held: IncomingMessage[] = [];
  let failure: unknown;
  /** True while a record is on its way to the sink. */
  let handing = false;

  const consumer = new Consumer({ ...baseOptions(opts.connection), groupId, protocols: GROUP_PROTOCOLS, autocommit: false, maxWaitTime: opts.maxWaitTimeInMs ?? kafkaFetchDefaults.maxWaitTimeInMs });
  consumer.on('error', (err: Error) => (failure ??= err));
  let stream: MessagesStream<Buffer, Buffer, Buffer, Buffer>;
  try {
    stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false });
  } catch (err) {
    await consumer.close(true).catch(() => undefined);
    throw new EventBusUnavailableError(`cannot read ${topic}: ${(err as Error).message}`, { cause: err });
  }
  stream.on('error', (err: Error) => (failure ??= err));
  const reading = (async () => {
    for await (const m of stream as AsyncIterable<Message>) {
      const offset = m.offset;
      if (offset < (position.get(m.partition) ?? 0n)) continue;
      const headers: Record<string, Buffer> = {};
      for (const [k, v] of m.headers) headers[k.toString()] = v;
      const msg: IncomingMessage = { topic, partition: m.partition, offset: String(offset), key: m.key ?? null, value: m.value ?? null, headers, timestamp: String(m.timestamp) };
      // Handed over before the position moves: readToEnd returns only once its sink has them.
      handing = true;
      if (sink) await sink([msg]);
      else held.push(msg);
      handing = false;
      position.set(m.partition, offset + 1n);
    }
  })().catch((err: unknown) => (failure ??= err));

  /** Where a partition's read stands: past the transaction markers the library skipped once nothing waits to be handed over. */
  function reached(partition: number): bigint {
    const handed = position.get(partition) ?? 0n;
    if (handing || stream.readableLength > 0) return handed;
    const fetched = stream.offsetsToFetch.get(`${topic}:${partition}`) ?? 0n;
    return fetched > handed ? fetched : handed;
  }

  return {
    async readToEnd(onMessages) {
      const offsets = await opts
        .admin()
        .then((a) => topicOffsets(a, topic))
        .catch((err: unknown) => {
          throw err instanceof EventBusUnavailableError ? err : new EventBusUnavailableError(`cannot read the end offsets of ${topic}: ${(err as Error).message}`, { cause: err });
        });
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
          let left = 0n;
          for (const [p, end] of ends) if (reached(p) < end) left += end - reached(p);
          if (left === 0n) return;
          if (left !== lastLeft) [lastLeft, lastMoved] = [left, Date.now()];
          else if (Date.now() - lastMoved > STALL_TIMEOUT_MS) {
            throw new EventBusUnavailableError(`reading ${topic} made no progress for ${STALL_TIMEOUT_MS} ms (${left} records behind)`);
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      } finally {
        sink = undefined;
      }
    },
    async close() {
      await stream.close().catch(() => undefined);
      await reading;
      await consumer.close(true).catch((err: unknown) => log.warn({ err }, 'topic reader close failed'));
      await opts
        .admin()
        .then((a) => a.deleteGroups({ groups: [groupId] }))
        .catch((err: unknown) => log.info({ err }, 'throwaway consumer group not deleted (the broker expires it)'));
    },
  };
}
