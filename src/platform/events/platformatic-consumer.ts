import { EVENTS_DEFAULTS } from './defaults.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { Consumer, type Message, type MessagesStream } from '@platformatic/kafka';
import { backoffDelayMs } from '../backoff/index.ts';
import type { Logger } from '../observability/logger.ts';
import type { ConsumerHandle, IncomingMessage } from './bus.ts';
import type { MessageProcessor } from './consumer-runner.ts';
import { kafkaFetchDefaults } from './kafka-consumer.ts';
import { baseOptions, type PlatformaticConnection } from './platformatic-clients.ts';
import { createLanes } from './platformatic-lanes.ts';

/**
 * Runs one consumer on @platformatic/kafka: a group member whose one message stream (read committed,
 * from the committed offsets, the earliest where none) feeds the partition lanes
 * (platformatic-lanes.ts), with manual commits only. A stream or group membership the library gives
 * up on (its fetch fails, a rejoin fails, heartbeats stall) is not left dead: the member is closed and
 * a new one takes its place after a backoff, until it runs or the handle stops.
 */
export interface PlatformaticConsumerOptions {
  connection: PlatformaticConnection;
  processor: MessageProcessor;
  log: Logger;
  maxWaitTimeInMs?: number;
  /** Group session timeout (the library's default is 60,000). */
  sessionTimeoutMs?: number;
}

/**
 * The group protocol under kafkajs's name for round robin (the library's own default is "roundrobin"):
 * both then join one group, each reads the other's standard subscription and assignment, and a
 * rolling switch of KAFKA_CLIENT never has half the replicas refused with INCONSISTENT_GROUP_PROTOCOL.
 */
export const GROUP_PROTOCOLS = [{ name: 'RoundRobinAssigner', version: 1 }];

/** Records held in the lanes before the stream is read no further (it then stops fetching). */
const MAX_QUEUED = EVENTS_DEFAULTS.platformaticMaxQueuedRecords;

type Member = { consumer: Consumer; stream: MessagesStream<Buffer, Buffer, Buffer, Buffer>; failed: Promise<Error> };

export async function startPlatformaticConsumer(opts: PlatformaticConsumerOptions): Promise<ConsumerHandle> {
  const { processor } = opts;
  const def = processor.consumer;
  const log = opts.log.child({ consumer: def.name, topic: def.topic });
  const halt = new AbortController();
  let current: Member | undefined;

  const lanes = createLanes({
    processor,
    log,
    commit: async ({ partition, offset, leaderEpoch }) => {
      await current?.consumer.commit({ offsets: [{ topic: def.physicalTopic, partition, offset, leaderEpoch }] });
    },
    fetchedEnd: (partition) => current?.stream.offsetsToFetch.get(`${def.physicalTopic}:${partition}`),
    buffered: () => (current?.stream.readableLength ?? 0) > 0,
  });

  const session = opts.sessionTimeoutMs;
  async function open(): Promise<Member> {
    const consumer = new Consumer({
      ...baseOptions(opts.connection),
      groupId: def.groupId,
      protocols: GROUP_PROTOCOLS,
      autocommit: false,
      maxWaitTime: opts.maxWaitTimeInMs ?? kafkaFetchDefaults.maxWaitTimeInMs,
      // Heartbeats at least three times per session, as with kafkajs.
      ...(session ? { sessionTimeout: session, heartbeatInterval: Math.min(3000, Math.floor(session / 3)), rebalanceTimeout: session } : {}),
    });
    const failed = Promise.withResolvers<Error>();
    // Without a listener an 'error' event would throw; a failed rejoin is one.
    consumer.on('error', (err: Error) => failed.resolve(err));
    consumer.on('consumer:heartbeat:stalled', ({ stalledFor }) => failed.resolve(new Error(`heartbeats stalled for ${stalledFor} ms`)));
    consumer.on('consumer:group:join', ({ memberId, assignments }) => {
      const partitions = (assignments ?? []).filter((a) => a.topic === def.physicalTopic).flatMap((a) => a.partitions);
      lanes.keepOnly(new Set(partitions));
      log.info({ memberId, partitions }, 'kafka consumer joined its group');
    });
    try {
      const stream = await consumer.consume({
        topics: [def.physicalTopic],
        mode: 'committed',
        fallbackMode: 'earliest',
        autocommit: false,
        ...(session ? { sessionTimeout: session, heartbeatInterval: Math.min(3000, Math.floor(session / 3)), rebalanceTimeout: session } : {}),
      });
      stream.on('error', (err: Error) => failed.resolve(err));
      stream.on('close', () => failed.resolve(new Error('message stream closed')));
      return { consumer, stream, failed: failed.promise };
    } catch (err) {
      await consumer.close(true).catch(() => undefined);
      throw err;
    }
  }

  /** Hands the member's records to the lanes until its stream ends or fails. */
  async function pump(member: Member): Promise<void> {
    const read = (async () => {
      for await (const m of member.stream as AsyncIterable<Message>) {
        lanes.push(incoming(def.physicalTopic, m), m.leaderEpoch);
        if (lanes.queued() >= MAX_QUEUED) await lanes.below(MAX_QUEUED / 2);
      }
    })().catch((err: unknown) => err as Error);
    const err = await Promise.race([read, member.failed]);
    if (halt.signal.aborted) return;
    log.error({ err: { message: err instanceof Error ? err.message : 'stream ended' } }, 'kafka consumer stream failed; replacing the group member');
  }

  async function close(member: Member): Promise<void> {
    await member.stream.close().catch(() => undefined);
    await lanes.drain();
    await member.consumer.close(true).catch((err: unknown) => log.debug({ err }, 'consumer close failed'));
  }

  /** Runs members one after another until stopped: each failure closes the member and, after a backoff, opens another. */
  async function runLoop(first: Member): Promise<void> {
    let member: Member | undefined = first;
    for (let attempt = 0; !halt.signal.aborted; ) {
      if (member) {
        current = member;
        await pump(member);
        await close(member);
        member = current = undefined;
        attempt = 1;
      }
      if (halt.signal.aborted) break;
      await sleep(backoffDelayMs(EVENTS_DEFAULTS.consumerReplaceBackoff, attempt), undefined, { signal: halt.signal }).catch(() => undefined);
      if (halt.signal.aborted) break;
      try {
        member = await open();
        log.warn({ attempt }, 'kafka consumer replaced');
      } catch (err) {
        attempt++;
        log.error({ err, attempt }, 'kafka consumer could not be replaced yet; trying again');
      }
    }
  }

  const running = runLoop(await open());
  log.info({ groupId: def.groupId, client: 'platformatic' }, 'kafka consumer started');
  let stopped: Promise<void> | undefined;
  return {
    name: def.name,
    stop() {
      stopped ??= (async () => {
        halt.abort();
        const m = current;
        if (m) await close(m);
        await running;
        log.info('kafka consumer stopped');
      })();
      return stopped;
    },
  };
}

function incoming(topic: string, m: Message): IncomingMessage {
  const headers: Record<string, Buffer> = {};
  for (const [k, v] of m.headers) headers[k.toString()] = v;
  return { topic, partition: m.partition, offset: String(m.offset), key: m.key ?? null, value: m.value ?? null, headers };
}
