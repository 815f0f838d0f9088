import type { Db } from '../db/index.ts';
import type { Logger } from '../observability/logger.ts';
import { backoffDelayMs } from '../backoff/index.ts';
import type { IncomingMessage, OutgoingMessage } from './bus.ts';
import type { ResolvedConsumer } from './consumer-definition.ts';
import { handleInTransaction, type Decoded } from './consumer-transaction.ts';
import type { ConsumerMetrics } from './consumer-metrics.ts';
import { deadLetterMessage } from './dead-letter.ts';
import { envelopeFromWire } from './envelope.ts';
import { errorSummary, isPoisonMessageError, type PoisonMessageError } from './errors.ts';

export { resolveConsumer, type ResolvedConsumer } from './consumer-definition.ts';

/**
 * The consumer contract of DESIGN "Consumers", independent of the transport. Both adapters feed
 * the messages of one partition, in order, to `processBatch`; it reports how many are done
 * (their offsets may be committed) and, if it stopped early, the infrastructure error of the
 * next one, which the adapter retries after `retryDelay` (Kafka: pause + seek back).
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
  /** Set when messages[done] failed with an infrastructure error: retry it after a delay. */
  error?: unknown;
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

  async function deadLetter(msg: IncomingMessage, err: PoisonMessageError, messageId?: string): Promise<void> {
    await deps.publish([deadLetterMessage(msg, err)]);
    metrics.deadLettered.inc({ consumer: consumer.name, topic: consumer.topic, code: err.code });
    metrics.messages.inc({ consumer: consumer.name, outcome: 'dead_lettered' });
    log.warn({ partition: msg.partition, offset: msg.offset, messageId, code: err.code, reason: err.message }, 'message dead-lettered');
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
        return { done, error: err }; // a custom idempotencyKey threw: a bug, retried until fixed
      }
      if (group.length > 0) {
        const result = await handleInTransaction(group, consumer, deps.db, metrics, log);
        done += result.done;
        if (result.done < group.length) {
          const failed = group[result.done]!;
          if (!isPoisonMessageError(result.error)) return { done, error: result.error };
          try {
            await deadLetter(failed.msg, result.error, failed.event.messageId);
          } catch (err) {
            return { done, error: err };
          }
          done += 1;
        }
        continue;
      }
      try {
        await deadLetter(messages[done]!, unreadable!);
      } catch (err) {
        return { done, error: err };
      }
      done += 1;
    }
    return { done };
  }

  function retryDelay(msg: IncomingMessage, err: unknown, attempt: number): number {
    const delayMs = backoffDelayMs(consumer.backoff, attempt);
    metrics.messages.inc({ consumer: consumer.name, outcome: 'retried' });
    log.warn({ partition: msg.partition, offset: msg.offset, attempt, delayMs, err: errorSummary(err) }, 'message failed, partition paused for retry');
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
