import type { Db } from '../db/index.ts';
import type { OutgoingMessage } from '../events/bus.ts';
import { EventBusFencedError, EventBusUnavailableError } from '../events/errors.ts';
import { ReportedError } from '../errors/index.ts';
import type { BatchRun, Outcome } from '../jobs/index.ts';
import { LeaseLostError, type Fence } from '../jobs/lease-sql.ts';
import { isTopicLevelError, orderingKey, publishErrorText, rowToMessage, splitHeldBack } from './messages.ts';
import type { OutboxMetrics } from './metrics.ts';
import { publishTraced } from './publish-tracing.ts';
import { recordPublishFailure, type PendingRow } from './sql.ts';

/**
 * What one run keeps: the keys and topics that failed in it (every later row of a failed key — or
 * of a topic the broker refused as a whole — waits for the next run), the read cursor with the read
 * of the next batch already under way, and the ids sent whose mark is not written yet, which every
 * read leaves out so a new pass never re-sends a row it sent (nor waits for the mark).
 */
export interface PublishRun {
  blockedKeys: Set<string>;
  blockedTopics: Set<string>;
  cursor: string;
  next: Promise<PendingRow[]> | undefined;
  /** One set of ids per mark under way (each set never changes, so a read's snapshot is a copy of this list). */
  unmarked: Set<ReadonlySet<string>>;
}

/** A row's failed send: logged and counted by the publisher in its own words, so the kernel adds no line. */
class SendFailed extends ReportedError {}

/**
 * The outbox publisher's step 2 (publisher.ts): send a batch in bulk; if that fails, row by row —
 * a row that fails blocks every later row of its key for the rest of the run (a topic-level Kafka
 * error: every later row of its topic), other keys go on; an unreachable bus ends the run.
 */
export function createOutboxSender(deps: {
  db: Db;
  metrics: OutboxMetrics;
  send: (messages: readonly OutgoingMessage[]) => Promise<void>;
  topicPrefix: string | undefined;
}): { sendBatch(rows: readonly PendingRow[], state: PublishRun, run: BatchRun): Promise<Outcome<PendingRow, Date>[]> } {
  const { db, metrics, send } = deps;
  const opts = { topicPrefix: deps.topicPrefix };
async function recordFailure(rows: readonly PendingRow[], err: unknown, fence: Fence | undefined): Promise<void> {
  await recordPublishFailure(db, rows.map((r) => r.id), publishErrorText(err), fence);
  for (const r of rows) metrics.failures.inc({ topic: r.topic });
}

const sent = (row: PendingRow, at: Date): Outcome<PendingRow, Date> => ({ row, status: 'done', result: at });
const released = (row: PendingRow): Outcome<PendingRow, Date> => ({ row, status: 'released' });

async function sendRowByRow(rows: readonly PendingRow[], state: PublishRun, run: BatchRun): Promise<Outcome<PendingRow, Date>[]> {
  const outcomes: Outcome<PendingRow, Date>[] = [];
  let tried = 0;
  for (const [i, row] of rows.entries()) {
    if (state.blockedTopics.has(row.topic) || state.blockedKeys.has(orderingKey(row))) {
      run.count('heldBack');
      outcomes.push(released(row));
      continue;
    }
    if (tried > 0 ? run.signal.aborted || run.timeLeftMs() <= 0 : run.stop.aborted) {
      run.log.info({ untried: rows.length - i, sent: outcomes.filter((o) => o.status === 'done').length }, 'outbox run stopping: rows not tried stay for the next run');
      outcomes.push(...rows.slice(i).map(released));
      run.endPhase('rows not tried stay for the next run');
      break;
    }
    tried += 1;
    try {
      await publishTraced(send, [row], [rowToMessage(row, opts.topicPrefix)]);
      outcomes.push(sent(row, run.now()));
    } catch (err) {
      if (err instanceof EventBusFencedError || err instanceof LeaseLostError) throw err; // taken over: not the row's failure, and no more sends
      await recordFailure([row], err, run.fence);
      state.blockedKeys.add(orderingKey(row));
      outcomes.push({ row, status: 'failed', error: new SendFailed(publishErrorText(err)) });
      const topicLevel = isTopicLevelError(err);
      if (topicLevel) state.blockedTopics.add(row.topic);
      run.log.warn(
        { outboxId: row.id, topic: row.topic, eventType: row.eventType, err: publishErrorText(err) },
        topicLevel ? 'outbox topic refused by the broker; its rows wait for the next run' : 'outbox row not published; its key waits',
      );
      if (err instanceof EventBusUnavailableError) {
        outcomes.push(...rows.slice(i + 1).map(released));
        run.endPhase('event bus unreachable');
        break;
      }
    }
  }
  return outcomes;
}

async function sendBatch(rows: readonly PendingRow[], state: PublishRun, run: BatchRun): Promise<Outcome<PendingRow, Date>[]> {
  const { sendable, heldBack } = splitHeldBack(rows, state.blockedKeys, state.blockedTopics);
  run.count('heldBack', heldBack.length);
  const outcomes = heldBack.map(released);
  if (sendable.length === 0) return outcomes;
  try {
    await publishTraced(send, sendable, sendable.map((r) => rowToMessage(r, opts.topicPrefix)));
    const at = run.now();
    return [...outcomes, ...sendable.map((row) => sent(row, at))];
  } catch (err) {
    if (err instanceof EventBusFencedError || err instanceof LeaseLostError) throw err; // taken over: the run ends, nothing counted on the rows
    if (err instanceof EventBusUnavailableError) {
      // Row by row would fail the same way, once per row: count the attempt on all, stop.
      await recordFailure(sendable, err, run.fence);
      run.log.warn({ rows: sendable.length, err: publishErrorText(err) }, 'event bus unreachable, outbox publishing paused until the next run');
      run.endPhase('event bus unreachable');
      const error = new SendFailed(publishErrorText(err));
      return [...outcomes, ...sendable.map((row) => ({ row, status: 'failed' as const, error }))];
    }
    run.log.warn({ rows: sendable.length, err: publishErrorText(err) }, 'bulk send failed, retrying the batch row by row');
    return [...outcomes, ...(await sendRowByRow(sendable, state, run))];
  }
}

  return { sendBatch };
}
