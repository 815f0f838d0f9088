import type { Consumer, EachBatchPayload } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import type { IncomingMessage } from './bus.ts';
import type { MessageProcessor } from './consumer-runner.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';

/**
 * One kafkajs batch of a consumer (kafka-consumer.ts): its messages in chunks of one transaction
 * each, offsets resolved and committed only once their transactions committed, and a failed
 * message's partition paused, sought back to it and resumed after its backoff — so order within
 * the partition holds and the other partitions keep flowing; a long batch yields (BATCH_YIELD_MS), so
 * it never holds the next fetch of the other partitions for long. eachBatch never throws for a message
 * (kafkajs's own retry would re-fetch and eventually restart the whole consumer).
 */
export interface BatchHandler {
  handle(consumer: Consumer, payload: EachBatchPayload): Promise<void>;
  /** No paused partition resumes any more (the consumer is stopping). */
  stop(): void;
}

/**
 * A batch stops taking new transactions after this long and returns with what it has committed; the
 * rest of its partition comes in the next fetch. kafkajs fetches again only once every batch of the
 * last fetch has returned (its fetcher waits for its worker queue), so without this one partition's
 * long batch — a chat's flood of messages — would hold every other partition's new records for as
 * long as it runs, however many partitions run at once (partitionsConcurrently).
 */
export const BATCH_YIELD_MS = EVENTS_DEFAULTS.kafkaBatchYieldMs;

export function createBatchHandler(deps: { processor: MessageProcessor; log: Logger; stopping: () => boolean }): BatchHandler {
  const { processor, log, stopping } = deps;
  const def = processor.consumer;
  const resumeTimers = new Set<NodeJS.Timeout>();

/** `consumer`: the one whose batch failed (a replaced consumer's batches never touch its successor). */
function retryLater(consumer: Consumer, topic: string, partition: number, msg: IncomingMessage, err: unknown, attempt: number): void {
  const delay = processor.retryDelay(msg, err, attempt);
  consumer.pause([{ topic, partitions: [partition] }]);
  consumer.seek({ topic, partition, offset: msg.offset });
  const timer = setTimeout(() => {
    resumeTimers.delete(timer);
    if (stopping()) return;
    try {
      consumer.resume([{ topic, partitions: [partition] }]);
    } catch (resumeErr) {
      // The consumer is restarting; its fresh group state is not paused anyway.
      log.debug({ partition, err: resumeErr }, 'resume after backoff skipped');
    }
  }, delay);
  resumeTimers.add(timer);
}

async function eachBatch(consumer: Consumer, payload: EachBatchPayload): Promise<void> {
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
    let index = 0;
    const started = performance.now();
    for (; index < messages.length; ) {
      if (stopping() || !payload.isRunning() || payload.isStale()) break;
      if (index > 0 && performance.now() - started >= BATCH_YIELD_MS) break;
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
        retryLater(consumer, topic, partition, messages[index]!, error, attempt ?? 1);
        break;
      }
      await payload.heartbeat();
    }
    // The whole batch handled: move past the transaction markers it ends with too (a transactional
    // producer's commit marker takes an offset), so the committed offset reaches the end of the log.
    const end = batch.lastOffset();
    if (index === messages.length && messages.length > 0 && BigInt(end) >= BigInt(nextOffset ?? '0')) {
      payload.resolveOffset(end);
      nextOffset = String(BigInt(end) + 1n);
      processor.reportLag(partition, highWatermark, Number(nextOffset));
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

  return {
    handle: eachBatch,
    stop() {
      for (const t of resumeTimers) clearTimeout(t);
      resumeTimers.clear();
    },
  };
}
