import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import type { ConsumerHandle, IncomingMessage } from './bus.ts';
import type { MessageProcessor } from './consumer-runner.ts';

/**
 * Runs one consumer on kafkajs. kafkajs's own retry is never used for handler errors (it would
 * re-fetch and eventually restart the whole consumer): eachBatch never throws for a message.
 * Instead a failed message pauses its partition, seeks back to the failed offset and resumes
 * after the backoff, so order within the partition holds and other partitions keep flowing.
 * Offsets are committed explicitly (autoCommit off), after the handler transactions committed.
 * "Stop after the current message" holds per transaction chunk (maxMessagesPerTransaction).
 */
export interface KafkaConsumerOptions {
  kafka: Kafka;
  processor: MessageProcessor;
  log: Logger;
  /** Longest wait of an empty fetch; bounds how long stop and resume take. */
  maxWaitTimeInMs?: number;
  /** Group session timeout (kafkajs default 30,000). */
  sessionTimeoutMs?: number;
}

export async function startKafkaConsumer(opts: KafkaConsumerOptions): Promise<ConsumerHandle> {
  const { processor } = opts;
  const { consumer: def } = processor;
  const log = opts.log.child({ consumer: def.name, topic: def.topic });
  const consumer: Consumer = opts.kafka.consumer({
    groupId: def.groupId,
    maxWaitTimeInMs: opts.maxWaitTimeInMs ?? 500,
    // kafkajs heartbeats every 3 s by default: a shorter session needs them at least three times in it.
    ...(opts.sessionTimeoutMs ? { sessionTimeout: opts.sessionTimeoutMs, heartbeatInterval: Math.min(3000, Math.floor(opts.sessionTimeoutMs / 3)) } : {}),
    // A consumer that crashed (e.g. the broker went away for longer than the client retries)
    // always restarts; giving up would silently stop a context's event flow.
    retry: { restartOnFailure: async () => true },
  });
  const resumeTimers = new Set<NodeJS.Timeout>();
  let stopping = false;

  consumer.on(consumer.events.CRASH, (e) => {
    log.error({ err: { name: e.payload.error.name, message: e.payload.error.message }, restart: e.payload.restart }, 'kafka consumer crashed');
  });
  // When the flow resumes after a crash or rebalance, and how long the join took: a join that
  // waited ~a session timeout means the group still listed a member that never came back.
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    const { memberId, duration, memberAssignment } = e.payload;
    log.info({ memberId, durationMs: duration, partitions: memberAssignment[def.physicalTopic] ?? [] }, 'kafka consumer joined its group');
  });

  function retryLater(topic: string, partition: number, msg: IncomingMessage, err: unknown, attempt: number): void {
    const delay = processor.retryDelay(msg, err, attempt);
    consumer.pause([{ topic, partitions: [partition] }]);
    consumer.seek({ topic, partition, offset: msg.offset });
    const timer = setTimeout(() => {
      resumeTimers.delete(timer);
      if (stopping) return;
      try {
        consumer.resume([{ topic, partitions: [partition] }]);
      } catch (resumeErr) {
        // The consumer is restarting; its fresh group state is not paused anyway.
        log.debug({ partition, err: resumeErr }, 'resume after backoff skipped');
      }
    }, delay);
    resumeTimers.add(timer);
  }

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const { topic, partition } = batch;
    const highWatermark = Number(batch.highWatermark);
    const messages: IncomingMessage[] = batch.messages.map((m) => ({
      topic,
      partition,
      offset: m.offset,
      key: m.key ?? null,
      value: m.value ?? null,
      headers: m.headers ?? {},
    }));
    let nextOffset: string | undefined;
    let threw = false;
    try {
      // Chunks of one transaction each; between them: stop requests, heartbeats.
      for (let index = 0; index < messages.length; ) {
        if (stopping || !payload.isRunning() || payload.isStale()) break;
        const chunk = messages.slice(index, index + def.maxMessagesPerTransaction);
        const { done, error, attempt } = await processor.processBatch(chunk);
        if (done > 0) {
          const last = chunk[done - 1]!.offset;
          payload.resolveOffset(last);
          nextOffset = String(BigInt(last) + 1n);
          processor.reportLag(partition, highWatermark, Number(nextOffset));
        }
        index += done;
        if (error !== undefined) {
          retryLater(topic, partition, messages[index]!, error, attempt ?? 1);
          break;
        }
        await payload.heartbeat();
      }
    } catch (err) {
      threw = true; // heartbeat: rebalance in progress; kafkajs rejoins when we rethrow
      throw err;
    } finally {
      if (nextOffset !== undefined) {
        // Only offsets whose transactions committed; after a failure the commit is best effort
        // (the inbox turns a redelivery into a skip).
        const commit = payload.commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: nextOffset }] }] });
        if (threw) await commit.catch(() => undefined);
        else await commit;
      }
    }
  }

  try {
    await consumer.connect();
    await consumer.subscribe({ topic: def.physicalTopic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: def.partitionsConcurrently,
      eachBatch,
    });
  } catch (err) {
    // The caller retries with a new consumer: this one must not keep its connections (or, once
    // run() got that far, its group membership) behind. Harmless after a failed connect.
    stopping = true;
    await consumer.disconnect().catch((disconnectErr: unknown) => {
      log.debug({ err: disconnectErr }, 'disconnect after a failed start failed');
    });
    throw err;
  }
  log.info({ groupId: def.groupId }, 'kafka consumer started');

  let stopped: Promise<void> | undefined;
  return {
    name: def.name,
    stop() {
      stopped ??= (async () => {
        stopping = true;
        for (const t of resumeTimers) clearTimeout(t);
        resumeTimers.clear();
        await consumer.disconnect();
        log.info('kafka consumer stopped');
      })();
      return stopped;
    },
  };
}
