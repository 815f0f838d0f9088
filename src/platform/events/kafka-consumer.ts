import { setTimeout as sleep } from 'node:timers/promises';
import type { Consumer, Kafka } from 'kafkajs';
import { backoffDelayMs } from '../backoff/index.ts';
import type { Logger } from '../observability/logger.ts';
import type { ConsumerHandle } from './bus.ts';
import { createBatchHandler } from './kafka-batch.ts';
import type { MessageProcessor } from './consumer-runner.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';

/**
 * Runs one consumer on kafkajs. kafkajs's own retry is never used for handler errors (it would
 * re-fetch and eventually restart the whole consumer): eachBatch never throws for a message.
 * Instead a failed message pauses its partition, seeks back to the failed offset and resumes
 * after the backoff, so order within the partition holds and other partitions keep flowing.
 * Offsets are committed explicitly (autoCommit off), after the handler transactions committed.
 * "Stop after the current message" holds per transaction chunk (maxMessagesPerTransaction).
 * kafkajs restarts a crashed consumer only when the crash's root cause is retriable; after any other
 * (KafkaJSGroupCoordinatorNotFound on a new cluster, an unexpected error while processing a batch)
 * it leaves the consumer stopped for good, so a new consumer takes its place here.
 */
export interface KafkaConsumerOptions {
  kafka: Kafka;
  processor: MessageProcessor;
  log: Logger;
  /** Longest wait of an empty fetch; bounds how long stop and resume take (kafkaFetchDefaults). */
  maxWaitTimeInMs?: number;
  /** Group session timeout (kafkajs default 30,000). */
  sessionTimeoutMs?: number;
}

/** An empty fetch waits at most half a second: stop, pause and resume answer within it (kafkajs's own default is 5 s). */
export const kafkaFetchDefaults = { maxWaitTimeInMs: EVENTS_DEFAULTS.kafkaFetchMaxWaitMs } as const;


export async function startKafkaConsumer(opts: KafkaConsumerOptions): Promise<ConsumerHandle> {
  const { processor } = opts;
  const { consumer: def } = processor;
  const log = opts.log.child({ consumer: def.name, topic: def.topic });
  /** Aborted by stop(): ends a replacement's backoff wait, and tells every callback the handle is stopping. */
  const halt = new AbortController();
  const stopping = (): boolean => halt.signal.aborted;
  const batches = createBatchHandler({ processor, log, stopping });
  /** The running consumer (another after a replace). */
  let current: Consumer;
  let replacing: Promise<void> | undefined;

  /** A connected, running kafkajs consumer of the group; on failure it leaves nothing connected. */
  async function open(): Promise<Consumer> {
    const c: Consumer = opts.kafka.consumer({
      groupId: def.groupId,
      maxWaitTimeInMs: opts.maxWaitTimeInMs ?? kafkaFetchDefaults.maxWaitTimeInMs,
      // kafkajs heartbeats every 3 s by default: a shorter session needs them at least three times in it.
      ...(opts.sessionTimeoutMs ? { sessionTimeout: opts.sessionTimeoutMs, heartbeatInterval: Math.min(3000, Math.floor(opts.sessionTimeoutMs / 3)) } : {}),
      // Restart after every crash kafkajs deems retriable (e.g. the broker went away for longer than the client retries).
      retry: { restartOnFailure: async () => true },
    });
    // kafkajs's run() does not throw when joining fails: it crashes the consumer and resolves. A crash
    // it will not restart from, before open() returned, fails the start (the caller or replace() tries again).
    let starting = true;
    let startCrash: Error | undefined;
    c.on(c.events.CRASH, (e) => {
      const { error, restart } = e.payload;
      log.error({ err: { name: error.name, message: error.message }, restart }, 'kafka consumer crashed');
      if (restart) {
        // Stopped while kafkajs was crashing: its restart timer is set after this event; stop it again then.
        if (stopping()) setImmediate(() => void c.disconnect().catch(() => undefined));
      } else if (starting) startCrash ??= error;
      else if (!stopping() && c === current) replacing ??= replace();
    });
    // A fetched batch of transaction markers only never reaches eachBatch: kafkajs moves the position
    // past it and commits only with autoCommit on. Commit it here, else a consumer of a transactional
    // topic would stay one offset short of the log's end (consumer_lag never back to 0).
    c.on(c.events.END_BATCH_PROCESS, (e) => {
      const { topic, partition, batchSize, lastOffset } = e.payload as { topic: string; partition: number; batchSize: number; lastOffset: string | null };
      if (batchSize !== 0 || lastOffset === null || stopping()) return;
      const offset = String(BigInt(lastOffset) + 1n);
      c.commitOffsets([{ topic, partition, offset }]).then(
        () => processor.reportLag(partition, Number(offset), Number(offset)),
        (err: Error) => log.debug({ err: { message: err.message }, partition }, 'committing past transaction markers failed; the next batch commits past them'),
      );
    });
    // When the flow resumes after a crash or rebalance, and how long the join took: a join that
    // waited ~a session timeout means the group still listed a member that never came back.
    c.on(c.events.GROUP_JOIN, (e) => {
      const { memberId, duration, memberAssignment } = e.payload;
      log.info({ memberId, durationMs: duration, partitions: memberAssignment[def.physicalTopic] ?? [] }, 'kafka consumer joined its group');
    });
    try {
      await c.connect();
      await c.subscribe({ topic: def.physicalTopic, fromBeginning: true });
      await c.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: def.partitionsConcurrently,
        eachBatch: (payload) => batches.handle(c, payload),
      });
      starting = false;
      if (startCrash) throw startCrash;
    } catch (err) {
      // Not to keep its connections (or, once run() got that far, its group membership) behind
      // when the caller, or replace(), tries again. Harmless after a failed connect.
      await c.disconnect().catch((disconnectErr: unknown) => {
        log.debug({ err: disconnectErr }, 'disconnect after a failed start failed');
      });
      throw err;
    }
    return c;
  }

  /** A new consumer in place of one kafkajs will not restart, tried with backoff until it runs or the handle stops. */
  async function replace(): Promise<void> {
    for (let attempt = 1; !stopping(); attempt++) {
      await sleep(backoffDelayMs(EVENTS_DEFAULTS.consumerReplaceBackoff, attempt), undefined, { signal: halt.signal }).catch(() => undefined);
      if (stopping()) break;
      try {
        current = await open();
        log.warn({ attempt }, 'kafka consumer replaced: kafkajs does not restart after that crash');
        break;
      } catch (err) {
        log.error({ err, attempt }, 'kafka consumer could not be replaced yet; trying again');
      }
    }
    replacing = undefined;
  }

  current = await open();
  log.info({ groupId: def.groupId }, 'kafka consumer started');

  let stopped: Promise<void> | undefined;
  return {
    name: def.name,
    stop() {
      stopped ??= (async () => {
        halt.abort();
        batches.stop();
        await replacing;
        await current.disconnect();
        log.info('kafka consumer stopped');
      })();
      return stopped;
    },
  };
}
