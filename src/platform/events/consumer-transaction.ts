import type { Db } from '../db/index.ts';
import type { Logger } from '../observability/logger.ts';
import type { IncomingMessage } from './bus.ts';
import type { ResolvedConsumer } from './consumer-definition.ts';
import type { ConsumerMetrics, ConsumerOutcome } from './consumer-metrics.ts';
import type { EventEnvelope } from './envelope.ts';
import { recordInInbox } from './inbox.ts';

/** A readable message; `key` (inbox idempotency key) is unset when its event type is not handled. */
export interface Decoded {
  msg: IncomingMessage;
  event: EventEnvelope;
  key: string | undefined;
}

/** A handler threw at `index` of the group; the transaction is rolled back. */
class HandlerFailure extends Error {
  readonly index: number;
  constructor(index: number, cause: unknown) {
    super('handler failed', { cause });
    this.index = index;
  }
}

/**
 * Handles consecutive messages of one partition in ONE transaction: one inbox insert for all of
 * them (a key already there = redelivery, handler skipped), then each handler in order, one
 * commit. Each message's effects commit together with its inbox row, and one commit per group
 * instead of per message is what lets a consumer keep up (a round trip costs more than a row).
 *
 * If handler i throws, the transaction is rolled back and messages 0..i−1 are handled again in
 * a new one, so one message's failure never undoes the others; the error of message i is
 * returned for the caller (poison → DLQ; anything else → retry later). `done` counts the
 * messages committed from the start of the group.
 */
export async function handleInTransaction(
  group: readonly Decoded[],
  consumer: ResolvedConsumer,
  db: Db,
  metrics: ConsumerMetrics,
  log: Logger,
): Promise<{ done: number; error?: unknown }> {
  let limit = group.length;
  let failure: unknown;
  let failed = false;
  for (;;) {
    const attempt = group.slice(0, limit);
    let outcomes: ConsumerOutcome[];
    try {
      outcomes = await handleOnce(attempt, consumer, db, metrics);
    } catch (err) {
      if (!(err instanceof HandlerFailure)) return { done: 0, error: err }; // BEGIN/inbox/COMMIT failed
      failed = true;
      failure = err.cause;
      limit = err.index;
      if (limit === 0) return { done: 0, error: failure };
      continue;
    }
    record(attempt, outcomes, consumer, metrics, log);
    return failed ? { done: limit, error: failure } : { done: limit };
  }
}

async function handleOnce(
  attempt: readonly Decoded[],
  consumer: ResolvedConsumer,
  db: Db,
  metrics: ConsumerMetrics,
): Promise<ConsumerOutcome[]> {
  const keys = attempt.flatMap((d) => (d.key === undefined ? [] : [d.key]));
  // Only foreign event types: acknowledged without touching the database.
  if (keys.length === 0) return attempt.map(() => 'skipped');
  return db.transaction(async (tx) => {
    const fresh = await recordInInbox(tx, keys, consumer.name);
    const outcomes: ConsumerOutcome[] = [];
    for (const [i, d] of attempt.entries()) {
      if (d.key === undefined) {
        outcomes.push('skipped');
      } else if (!fresh.delete(d.key)) {
        outcomes.push('duplicate'); // already in the inbox, or earlier in this same group
      } else {
        const stopTimer = metrics.handleDuration.startTimer({ consumer: consumer.name });
        try {
          await consumer.definition.handle(d.event, tx);
        } catch (err) {
          throw new HandlerFailure(i, err);
        } finally {
          stopTimer();
        }
        outcomes.push('handled');
      }
    }
    return outcomes;
  });
}

/** Metrics and logs once the group is committed (a rolled-back attempt counts nothing). */
function record(
  attempt: readonly Decoded[],
  outcomes: readonly ConsumerOutcome[],
  consumer: ResolvedConsumer,
  metrics: ConsumerMetrics,
  log: Logger,
): void {
  for (const [i, d] of attempt.entries()) {
    const outcome = outcomes[i]!;
    metrics.messages.inc({ consumer: consumer.name, outcome });
    const where = { partition: d.msg.partition, offset: d.msg.offset, messageId: d.event.messageId, eventType: d.event.eventType };
    if (outcome === 'skipped') {
      // Topics are shared (UserBlocked rides the users topic): acknowledged, never dead-lettered.
      log.debug(where, 'event type not handled, skipped');
      continue;
    }
    if (outcome === 'duplicate') log.debug(where, 'duplicate message skipped');
    if (d.event.contractVersion !== consumer.contractVersion) {
      metrics.contractVersionMismatch.inc({ consumer: consumer.name });
      log.warn(
        { ...where, contractVersion: d.event.contractVersion, expected: consumer.contractVersion },
        'unexpected contract version, processed anyway',
      );
    }
  }
}
