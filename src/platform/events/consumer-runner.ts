import type { Db } from '../db/index.ts';
import type { Logger } from '../observability/logger.ts';
import { backoffDelayMs } from '../backoff/index.ts';
import type { IncomingMessage, OutgoingMessage } from './bus.ts';
import type { ResolvedConsumer } from './consumer-definition.ts';
import { handleInTransaction, type Decoded } from './consumer-transaction.ts';
import { createAttemptTracker, RetriesExhaustedError } from './consumer-failures.ts';
import type { ConsumerMetrics } from './consumer-metrics.ts';
import { publishDeadLetter } from './dead-letter.ts';
import { envelopeFromWire } from './envelope.ts';
import { errorSummary, isPoisonMessageError, type PoisonMessageError } from './errors.ts';
import { recordInInbox } from './inbox.ts';

export { resolveConsumer, type ResolvedConsumer } from './consumer-definition.ts';

/**
 * The consumer contract of docs/architecture.md, "Consumers", independent of the transport. Both adapters feed
 * the messages of one partition, in order, to `processBatch`; it reports how many are done
 * (their offsets may be committed) and, if it stopped early, the error of the next one, which
 * the adapter retries after `retryDelay(msg, error, attempt)` (Kafka: pause + seek back).
 *
 * A message that fails `maxAttempts` times in a row with an error that may be its own (not an
 * outage: see countsAsAttempt) is dead-lettered as CONSUMER_RETRIES_EXHAUSTED. Every
 * dead-lettered message with an inbox key is recorded in the inbox right after its DLQ copy is
 * acknowledged and before its offset is committed, so a crash in between makes the redelivery a
 * duplicate instead of a second dead letter.
 */

export interface ProcessorDeps {
  db: Db;
  log: Logger;
  metrics: ConsumerMetrics;
  /** Produces the dead-letter copy (the bus's own publish). */
  publish(messages: readonly OutgoingMessage[]): Promise<void>;
}

export interface BatchResult {
  /** Messages finished (handled, duplicate, skipped or dead-lettered), from the start of the batch. */
  done: number;
  /** Set when messages[done] failed and is to be retried after a delay. */
  error?: unknown;
  /** With `error`: failed attempts of messages[done] in a row so far (1 = the first), for the backoff. */
  attempt?: number;
}

export interface MessageProcessor {
  readonly consumer: ResolvedConsumer;
  /** Processes messages of ONE partition in order; see BatchResult. Never throws. */
  processBatch(messages: readonly IncomingMessage[]): Promise<BatchResult>;
  /** Counts and logs a failed attempt; returns how long to wait before retrying. */
  retryDelay(msg: IncomingMessage, err: unknown, attempt: number): number;
  /** Updates the lag gauge of a partition. */
  reportLag(partition: number, highWatermark: number, nextOffset: number): void;
}

export function createMessageProcessor(consumer: ResolvedConsumer, deps: ProcessorDeps): MessageProcessor {
  const { metrics } = deps;
  const log = deps.log.child({ consumer: consumer.name, topic: consumer.topic });

  const attempts = createAttemptTracker();
  /** Per partition: the offset whose DLQ copy is acknowledged but whose inbox row is not written yet. */
  const lettered = new Map<number, { offset: string; err: PoisonMessageError; key: string; messageId: string }>();

  /**
   * DLQ copy, then (readable messages of a handled type) the inbox row in its own statement, then
   * the caller's offset commit. A crash after the copy and before the inbox row is the one window
   * left in which a message can reach the DLQ twice; the copies are identical (origin headers).
   */
  async function deadLetter(msg: IncomingMessage, err: PoisonMessageError, decoded?: { key?: string | undefined; messageId: string }): Promise<void> {
    const pending = lettered.get(msg.partition);
    const stripped = pending?.offset !== msg.offset && (await publishDeadLetter(deps.publish, msg, err, consumer.name));
    if (decoded?.key !== undefined) {
      lettered.set(msg.partition, { offset: msg.offset, err, key: decoded.key, messageId: decoded.messageId });
      await recordInInbox(deps.db, [decoded.key], consumer.name);
    }
    lettered.delete(msg.partition);
    attempts.done(msg.partition);
    metrics.deadLettered.inc({ consumer: consumer.name, topic: consumer.topic, code: err.code });
    metrics.messages.inc({ consumer: consumer.name, outcome: 'dead_lettered' });
    const exhausted = err instanceof RetriesExhaustedError ? { attempts: err.attempts, errorClass: err.errorClass } : {};
    log.warn(
      { partition: msg.partition, offset: msg.offset, messageId: decoded?.messageId, code: err.code, reason: err.message, ...exhausted, ...(stripped ? { stripped } : {}) },
      'message dead-lettered',
    );
  }

  /** messages[done] failed: the result that asks the adapter to retry it. */
  function retry(done: number, msg: IncomingMessage, error: unknown, counted = attempts.failed(msg.partition, msg.offset, error)): BatchResult {
    return { done, error, attempt: counted.all };
  }

  function decode(msg: IncomingMessage): Decoded | PoisonMessageError {
    try {
      const event = envelopeFromWire(msg, consumer.topic);
      const handled = consumer.eventTypes.has(event.eventType);
      return { msg, event, key: handled ? consumer.idempotencyKey(event) : undefined };
    } catch (err) {
      if (isPoisonMessageError(err)) return err;
      throw err;
    }
  }

  async function processBatch(messages: readonly IncomingMessage[]): Promise<BatchResult> {
    let done = 0;
    // The head was dead-lettered but its inbox row failed: finish that, never a second DLQ copy.
    const pending = messages.length > 0 ? lettered.get(messages[0]!.partition) : undefined;
    if (pending && pending.offset === messages[0]!.offset) {
      try {
        await deadLetter(messages[0]!, pending.err, pending);
      } catch (err) {
        return retry(0, messages[0]!, err);
      }
      done = 1;
    }
    while (done < messages.length) {
      // The readable messages up to the next unreadable one share one transaction.
      const group: Decoded[] = [];
      let unreadable: PoisonMessageError | undefined;
      try {
        while (done + group.length < messages.length && group.length < consumer.maxMessagesPerTransaction) {
          const decoded = decode(messages[done + group.length]!);
          if (decoded instanceof Error) {
            unreadable = decoded;
            break;
          }
          group.push(decoded);
        }
      } catch (err) {
        return retry(done, messages[done]!, err); // a custom idempotencyKey threw: a bug, retried until fixed
      }
      if (group.length > 0) {
        const result = await handleInTransaction(group, consumer, deps.db, metrics, log);
        done += result.done;
        if (result.done < group.length) {
          const failed = group[result.done]!;
          let poison: PoisonMessageError;
          let counted: ReturnType<typeof attempts.failed> | undefined;
          if (isPoisonMessageError(result.error)) poison = result.error;
          else {
            counted = attempts.failed(failed.msg.partition, failed.msg.offset, result.error);
            if (counted.counted < consumer.maxAttempts) return retry(done, failed.msg, result.error, counted);
            poison = new RetriesExhaustedError(counted.counted, result.error);
          }
          try {
            await deadLetter(failed.msg, poison, { key: failed.key, messageId: failed.event.messageId });
          } catch (err) {
            return retry(done, failed.msg, err, counted); // the same attempt: counted once
          }
          done += 1;
        }
        continue;
      }
      try {
        await deadLetter(messages[done]!, unreadable!);
      } catch (err) {
        return retry(done, messages[done]!, err);
      }
      done += 1;
    }
    if (done > 0) attempts.done(messages[0]!.partition);
    return { done };
  }

  /** The message's id and the consumer's logFields, for a line about it; {} when it cannot be read. */
  function eventFieldsOf(msg: IncomingMessage): Record<string, unknown> {
    try {
      const event = envelopeFromWire(msg, consumer.topic);
      return { messageId: event.messageId, ...consumer.logFields(event) };
    } catch {
      return {};
    }
  }

  /** Warn, not debug: at most one line per partition per backoff delay (1 s and up), however busy the topic. */
  function retryDelay(msg: IncomingMessage, err: unknown, attempt: number): number {
    const delayMs = backoffDelayMs(consumer.backoff, attempt);
    metrics.messages.inc({ consumer: consumer.name, outcome: 'retried' });
    log.warn(
      { partition: msg.partition, offset: msg.offset, ...eventFieldsOf(msg), attempt, delayMs, err: errorSummary(err) },
      'failed',
    );
    return delayMs;
  }

  function reportLag(partition: number, highWatermark: number, nextOffset: number): void {
    metrics.lag.set(
      { consumer: consumer.name, topic: consumer.topic, partition: String(partition) },
      Math.max(0, highWatermark - nextOffset),
    );
  }

  return { consumer, processBatch, retryDelay, reportLag };
}
