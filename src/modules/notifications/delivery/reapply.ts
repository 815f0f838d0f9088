import type { Logger } from '../../../platform/observability/index.ts';
import { enqueue } from '../../../platform/outbox/index.ts';
import { dispatchedEvent } from '../events.ts';
import type { SendSource } from '../metrics.ts';
import type { SendResult } from '../providers/port.ts';
import { deletePushTokens } from '../sql.ts';
import { cycleOutcomeOf, deadPushToken, observeOutcome, statusChangeOf, writeOf, type ClaimedNotification, type DeliveryDeps } from './outcomes.ts';
import { announcesStatus, recordStatusChanges } from '../status-frames.ts';
import { decideAttempt, endsCycle, type AttemptDecision } from './rules.ts';
import { lockDeliveryState, writeOutcomes } from './sql.ts';

export type ReapplyResult =
  | { outcome: 'sent' | 'retry' | 'terminal' | 'unknown'; raced: boolean }
  | { outcome: 'discarded'; raced: boolean }
  | { outcome: 'gone'; raced: false };

/**
 * One row's outcome on its own: the row changed since it was claimed (mark-read, a webhook, another
 * worker), or its batch's write failed. Re-read it under a row lock and apply the provider's answer
 * to what is there now — unless it became final (a Sent notification is never rolled back,
 * INV-NTF-5) or moved to another delivery cycle, in which case the stale answer is dropped (the
 * first committed mutation wins, A5). The outcome and its events commit together.
 */
export async function reapplyOutcome(
  deps: DeliveryDeps,
  log: Logger,
  row: ClaimedNotification,
  result: SendResult,
  source: SendSource,
  now: Date,
): Promise<ReapplyResult> {
  const { r, decision } = await deps.db.transaction(async (tx) => {
    const state = await lockDeliveryState(tx, row.id);
    if (!state) return { r: { outcome: 'gone', raced: false } as ReapplyResult, decision: null };
    const raced = state.version !== row.version;
    const sameCycle = state.deliveryCycle === row.deliveryCycle;
    const decision: AttemptDecision = sameCycle ? decideAttempt(state, result, row.policy, now) : { kind: 'discard' };
    if (decision.kind === 'discard' || decision.kind === 'skip') return { r: { outcome: 'discarded', raced } as ReapplyResult, decision: null };
    await writeOutcomes(tx, [writeOf(row, state.version, decision)], now);
    if (endsCycle(decision)) await enqueue(tx, dispatchedEvent(cycleOutcomeOf(row, decision), now));
    const token = deadPushToken(row, decision);
    if (token) await deletePushTokens(tx, [token]);
    if (announcesStatus(row.channel, decision.kind)) await recordStatusChanges(deps.userFrames, tx, [statusChangeOf({ ...row, readAt: state.readAt }, decision, state.version + 1)], now);
    return { r: { outcome: decision.kind, raced } as ReapplyResult, decision };
  });
  if (decision) observeOutcome(deps.metrics, log, row, decision, source);
  if (r.raced) deps.metrics.versionConflicts.inc({ writer: 'worker', resolution: r.outcome === 'discarded' ? 'discarded' : 'reapplied' });
  return r;
}
