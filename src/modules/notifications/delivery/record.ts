import type { BatchRun, Outcome } from '../../../platform/jobs/index.ts';
import { enqueue } from '../../../platform/outbox/index.ts';
import { dispatchedEvent } from '../events.ts';
import type { SendSource } from '../metrics.ts';
import type { SendResult } from '../providers/port.ts';
import { deletePushTokens } from '../sql.ts';
import { countOf, cycleOutcomeOf, deadPushToken, observeOutcome, statusChangeOf, writeOf, type ClaimedNotification, type DeliveryDeps, type WritableDecision } from './outcomes.ts';
import { announcesStatus, recordStatusChanges } from '../status-frames.ts';
import { reapplyOutcome } from './reapply.ts';
import { isHeld, type SendAttempt } from './send.ts';
import { decideAttempt, endsCycle, type AttemptDecision } from './rules.ts';
import { releaseLeases, writeOutcomes } from './sql.ts';

export type SendOutcome = Outcome<ClaimedNotification, SendAttempt>;

type Writable = WritableDecision;
interface Decided {
  row: ClaimedNotification;
  result: SendResult;
  decision: AttemptDecision;
}

/**
 * Step 3 of both delivery jobs, set-based: one transaction writes every outcome of the batch, with
 * the NotificationDispatchedEvent of each cycle-ending outcome, the NotificationStatusChanged frame
 * of each change and the deletion of dead push tokens (one notification with its events is the unit). If that transaction fails, it throws and the
 * kernel records the batch row by row (recordOneSend). After the commit: rows that lost an
 * optimistic-version race are re-read and re-applied one by one; rows whose channel cannot send
 * (skipped), rows a stop left unsent (released) and sends the stop grace cut off (stopped: no
 * attempt is counted) get their leases back, so the next run takes them at once (an email among
 * them keeps its send intent and is not claimed again, intent.ts). A row whose send threw (failed)
 * keeps its lease and comes back when it runs out.
 */
export async function recordSends(deps: DeliveryDeps, outcomes: readonly SendOutcome[], source: SendSource, run: BatchRun): Promise<void> {
  const now = run.now();
  const decided: Decided[] = [];
  const stopped: ClaimedNotification[] = [];
  for (const o of outcomes) {
    if (o.status !== 'done') continue;
    if (isHeld(o.result)) stopped.push(o.row);
    else decided.push({ row: o.row, result: o.result, decision: decideAttempt(o.row, o.result, o.row.policy, now) });
  }
  const writes = decided.filter((d) => d.decision.kind !== 'skip' && d.decision.kind !== 'discard');

  const applied = writes.length === 0 ? [] : await writeBatch(deps, writes, now);
  for (const w of applied) {
    run.count(countOf((w.decision as Writable).kind));
    observeOutcome(deps.metrics, run.log, w.row, w.decision, source);
  }
  const appliedIds = new Set(applied.map((w) => w.row.id));
  for (const lost of writes.filter((w) => !appliedIds.has(w.row.id))) {
    try {
      await reapply(deps, lost, source, run);
    } catch (err) {
      run.count('failed');
      run.log.error({ err, notificationId: lost.row.id }, 'notification outcome could not be recorded; it is retried after its lease');
    }
  }
  const skipped = decided.filter((d) => d.decision.kind === 'skip');
  for (const d of skipped) countSkip(deps, d.row, source, run);
  run.count('discarded', decided.filter((d) => d.decision.kind === 'discard').length);
  const released = outcomes.filter((o) => o.status === 'released').map((o) => o.row.id);
  countStopped(stopped, run);
  await giveBack(deps, [...released, ...stopped.map((r) => r.id), ...skipped.map((d) => d.row.id)], run);
}

/** Step 3 for one row, when the batch's transaction failed: its outcome alone, re-read under a row lock. */
export async function recordOneSend(deps: DeliveryDeps, o: SendOutcome, source: SendSource, run: BatchRun): Promise<void> {
  if (o.status === 'released') return giveBack(deps, [o.row.id], run);
  if (o.status === 'failed') return;
  if (isHeld(o.result)) {
    countStopped([o.row], run);
    return giveBack(deps, [o.row.id], run);
  }
  const decision = decideAttempt(o.row, o.result, o.row.policy, run.now());
  if (decision.kind === 'skip') {
    countSkip(deps, o.row, source, run);
    return giveBack(deps, [o.row.id], run);
  }
  if (decision.kind === 'discard') return void run.count('discarded');
  await reapply(deps, { row: o.row, result: o.result, decision }, source, run);
}

/** The batch's one transaction; returns the rows it wrote (the others lost a version race). */
async function writeBatch(deps: DeliveryDeps, writes: Decided[], now: Date): Promise<Decided[]> {
  return deps.db.transaction(async (tx) => {
    const ids = await writeOutcomes(
      tx,
      writes.map((w) => writeOf(w.row, w.row.version, w.decision as Writable)),
      now,
    );
    const won = writes.filter((w) => ids.has(w.row.id));
    await enqueue(
      tx,
      won.filter((w) => endsCycle(w.decision)).map((w) => dispatchedEvent(cycleOutcomeOf(w.row, w.decision), now)),
    );
    await deletePushTokens(
      tx,
      won.map((w) => deadPushToken(w.row, w.decision)).filter((t): t is string => t !== null),
    );
    await recordStatusChanges(
      deps.userFrames,
      tx,
      won.flatMap((w) => {
        const d = w.decision as Writable;
        return announcesStatus(w.row.channel, d.kind) ? [statusChangeOf(w.row, d, w.row.version + 1)] : [];
      }),
      now,
    );
    return won;
  });
}

async function reapply(deps: DeliveryDeps, d: Decided, source: SendSource, run: BatchRun): Promise<void> {
  const r = await reapplyOutcome(deps, run.log, d.row, d.result, source, run.now());
  if (r.raced) run.count('conflicts');
  if (r.outcome === 'discarded') run.count('discarded');
  else if (r.outcome !== 'gone') run.count(countOf(r.outcome));
}

/** Sends the stop grace cut off: released, not attempted (a deploy never uses up an attempt). */
function countStopped(rows: readonly ClaimedNotification[], run: BatchRun): void {
  if (rows.length === 0) return;
  run.count('released', rows.length);
  run.log.info(
    { notificationIds: rows.map((r) => r.id), rows: rows.length },
    'sends cut off by the stop grace; given back without using an attempt',
  );
}

/** A channel whose adapter turned out unable to send (A3): no attempt is counted, the row waits. */
function countSkip(deps: DeliveryDeps, row: ClaimedNotification, source: SendSource, run: BatchRun): void {
  run.count('skipped');
  deps.metrics.skipped.inc({ channel: row.channel, reason: 'provider_not_implemented' });
  deps.metrics.attempts.inc({ channel: row.channel, source, outcome: 'skipped' });
}

async function giveBack(deps: DeliveryDeps, ids: readonly string[], run: BatchRun): Promise<void> {
  if (ids.length === 0) return;
  await releaseLeases(deps.db, ids, run.jobRunId).catch((err: unknown) => run.log.warn({ err }, 'leases not released; they expire'));
}
