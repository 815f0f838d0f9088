import { pgErrorOf } from '../errors/index.ts';
import type { Db } from '../db/index.ts';
import type { Logger } from '../observability/logger.ts';
import type { IncomingMessage } from './bus.ts';
import type { ResolvedConsumer } from './consumer-definition.ts';
import type { ConsumerMetrics, ConsumerOutcome } from './consumer-metrics.ts';
import type { EventEnvelope } from './envelope.ts';
import { errorSummary, isPoisonMessageError, PoisonMessageError } from './errors.ts';
import { recordInInbox } from './inbox.ts';
import { endGroupTrace, inBatchHandleSpan, inGroupTransaction, inHandleSpan, startGroupTrace, traceOutcome, type GroupTrace } from './consumer-tracing.ts';

/** A readable message; `key` (inbox idempotency key) is unset when its event type is not handled. */
export interface Decoded {
  msg: IncomingMessage;
  event: EventEnvelope;
  key: string | undefined;
}

/** Dead-letter code of a message whose handler hit a SQL data error it would hit on every retry. */
export const CONSUMER_DATA_ERROR = 'CONSUMER_DATA_ERROR';

/**
 * The SQLSTATE of the first PostgreSQL error in the cause chain (drizzle wraps driver errors) when
 * retrying the same message cannot help: class 22, data exception (a number out of range 22003,
 * invalid text representation 22P02, a string too long 22001, …), and 23514, check violation.
 * Not 23505 (a unique violation can be a race a retry resolves), nor 40001/40P01 (serialization
 * failure, deadlock: retrying is the cure), nor anything else: those stay infrastructure errors.
 */
export function deterministicSqlState(err: unknown): string | undefined {
  const code = pgErrorOf(err)?.code;
  return code !== undefined && (code.startsWith('22') || code === '23514') ? code : undefined;
}

/**
 * A handler error as the runner should treat it: a deterministic data error becomes poison with a
 * stable code. The reason names the SQLSTATE and the constraint (schema, not data), never the
 * driver's message, which quotes the offending values.
 */
export function dataErrorAsPoison(err: unknown): unknown {
  if (isPoisonMessageError(err)) return err;
  const state = deterministicSqlState(err);
  if (state === undefined) return err;
  const constraint = pgErrorOf(err)?.constraint;
  return new PoisonMessageError(
    CONSUMER_DATA_ERROR,
    `handler hit a data error every retry would hit: SQLSTATE ${state}${constraint ? ` (constraint ${constraint})` : ''}`,
    { cause: err },
  );
}

/** A handler threw at `index` of the group; the transaction is rolled back. */
class HandlerFailure extends Error {
  readonly index: number;
  constructor(index: number, cause: unknown) {
    super('handler failed', { cause });
    this.index = index;
  }
}

/** The consumer's batch handler threw; the transaction is rolled back. */
class BatchFailure extends Error {
  constructor(cause: unknown) {
    super('batch handler failed', { cause });
  }
}

/**
 * Handles consecutive messages of one partition in ONE transaction: one inbox insert for all of
 * them (a key already there = redelivery, handler skipped), then the handlers, one commit. Each
 * message's effects commit together with its inbox row, and one commit per group instead of per
 * message is what lets a consumer keep up (a round trip costs more than a row).
 *
 * With a batch handler, the group's fresh events go to it in one call. If it throws, the
 * transaction is rolled back and the group is handled message by message as below, so every
 * rule about a failing message lives in one place.
 *
 * If handler i throws, the transaction is rolled back and messages 0..i−1 are handled again in
 * a new one, so one message's failure never undoes the others; the error of message i is
 * returned for the caller (poison, including a deterministic SQL data error → DLQ; anything
 * else → retry later). `done` counts the messages committed from the start of the group.
 */
export async function handleInTransaction(
  group: readonly Decoded[],
  consumer: ResolvedConsumer,
  db: Db,
  metrics: ConsumerMetrics,
  log: Logger,
): Promise<{ done: number; error?: unknown }> {
  const t = startGroupTrace(group, consumer);
  if (!t) return handleGroup(group, consumer, db, metrics, log, undefined);
  const result = await handleGroup(group, consumer, db, metrics, log, t);
  endGroupTrace(t, result);
  return result;
}

async function handleGroup(
  group: readonly Decoded[],
  consumer: ResolvedConsumer,
  db: Db,
  metrics: ConsumerMetrics,
  log: Logger,
  t: GroupTrace | undefined,
): Promise<{ done: number; error?: unknown }> {
  let limit = group.length;
  let failure: unknown;
  let failed = false;
  let batch = consumer.definition.handleBatch !== undefined;
  for (;;) {
    const attempt = group.slice(0, limit);
    let outcomes: ConsumerOutcome[];
    try {
      outcomes = await handleOnce(attempt, consumer, db, metrics, batch, t);
    } catch (err) {
      if (err instanceof BatchFailure) {
        batch = false;
        metrics.batchFallbacks.inc({ consumer: consumer.name });
        // A poison message in the group is routine (the single path dead-letters it); anything
        // else is worth a line, as a steady fallback costs throughput.
        const level = isPoisonMessageError(err.cause) ? 'debug' : 'info';
        log[level](
          { partition: group[0]!.msg.partition, fromOffset: group[0]!.msg.offset, messages: group.length, err: errorSummary(err.cause) },
          'batch handler failed, group handled message by message',
        );
        continue;
      }
      if (!(err instanceof HandlerFailure)) return { done: 0, error: err }; // BEGIN/inbox/COMMIT failed
      failed = true;
      // Only a handler's own error, once the single path has pinned it on message i; never a
      // failure of BEGIN/inbox/COMMIT, nor of a batch handler (the group is redone one by one).
      failure = dataErrorAsPoison(err.cause);
      limit = err.index;
      if (limit === 0) return { done: 0, error: failure };
      continue;
    }
    record(attempt, outcomes, consumer, metrics, log, t);
    return failed ? { done: limit, error: failure } : { done: limit };
  }
}

async function handleOnce(
  attempt: readonly Decoded[],
  consumer: ResolvedConsumer,
  db: Db,
  metrics: ConsumerMetrics,
  batch: boolean,
  t: GroupTrace | undefined,
): Promise<ConsumerOutcome[]> {
  const keys = attempt.flatMap((d) => (d.key === undefined ? [] : [d.key]));
  // Only foreign event types: acknowledged without touching the database.
  if (keys.length === 0) return attempt.map(() => 'skipped');
  const { definition } = consumer;
  return inGroupTransaction(t, () => db.transaction(async (tx) => {
    const fresh = await recordInInbox(tx, keys, consumer.name);
    const outcomes: ConsumerOutcome[] = attempt.map((d) =>
      d.key === undefined ? 'skipped' : fresh.delete(d.key) ? 'handled' : 'duplicate', // duplicate: in the inbox, or earlier in this group
    );
    const toHandle = attempt.filter((_, i) => outcomes[i] === 'handled');
    if (batch && definition.handleBatch && toHandle.length > 1) {
      const stopTimer = metrics.handleDuration.startTimer({ consumer: consumer.name });
      try {
        const handled = t ? outcomes.flatMap((o, i) => (o === 'handled' ? [i] : [])) : [];
        await inBatchHandleSpan(t, handled, () => definition.handleBatch!(toHandle.map((d) => d.event), tx));
      } catch (err) {
        throw new BatchFailure(err);
      } finally {
        stopTimer();
      }
      return outcomes;
    }
    for (const [i, d] of attempt.entries()) {
      if (outcomes[i] !== 'handled') continue;
      const stopTimer = metrics.handleDuration.startTimer({ consumer: consumer.name });
      try {
        await inHandleSpan(t, i, d.event.eventType, () => definition.handle(d.event, tx));
      } catch (err) {
        throw new HandlerFailure(i, err);
      } finally {
        stopTimer();
      }
    }
    return outcomes;
  }));
}

/** Metrics and logs once the group is committed (a rolled-back attempt counts nothing). */
function record(
  attempt: readonly Decoded[],
  outcomes: readonly ConsumerOutcome[],
  consumer: ResolvedConsumer,
  metrics: ConsumerMetrics,
  log: Logger,
  t: GroupTrace | undefined,
): void {
  for (const [i, d] of attempt.entries()) {
    const outcome = outcomes[i]!;
    traceOutcome(t, i, outcome);
    metrics.messages.inc({ consumer: consumer.name, outcome });
    const where = { partition: d.msg.partition, offset: d.msg.offset, messageId: d.event.messageId, eventType: d.event.eventType };
    if (outcome === 'skipped') {
      // Topics are shared (UserBlocked rides the users topic): acknowledged, never dead-lettered.
      log.debug(where, 'event type not handled, skipped');
      continue;
    }
    // Debug: on a replay every message is one, at full throughput.
    if (outcome === 'duplicate' && log.isLevelEnabled('debug')) log.debug({ ...where, ...consumer.logFields(d.event) }, 'skipped-duplicate');
    if (d.event.contractVersion !== consumer.contractVersion) {
      metrics.contractVersionMismatch.inc({ consumer: consumer.name });
      log.warn(
        { ...where, contractVersion: d.event.contractVersion, expected: consumer.contractVersion },
        'unexpected contract version, processed anyway',
      );
    }
  }
}
