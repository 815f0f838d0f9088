import { enqueue } from '../../../platform/outbox/enqueue.ts';
import { channelPolicy, type ChannelConfigs } from '../channels.ts';
import { cycleOutcomeOf, observeOutcome, writeOf, type DeliveryDeps } from './outcomes.ts';
import { dispatchedEvent } from '../events.ts';
import type { SendSource } from '../metrics.ts';
import { NTF } from '../model.ts';
import { decideAttempt, endsCycle, type AttemptDecision, type SendResult } from './rules.ts';
import { deletePushTokens, lockDeliveryState, writeOutcomes, type ClaimedRow } from './sql.ts';

export type ReapplyResult =
  | { outcome: 'sent' | 'retry' | 'terminal'; raced: boolean }
  | { outcome: 'discarded'; raced: boolean }
  | { outcome: 'gone' | 'failed'; raced: false };

/**
 * A5: the row changed since it was claimed (mark-read, a webhook, another worker) or the batch write
 * failed. Re-read it under a row lock and apply the provider's answer to what is there now — unless
 * it became final (Sent is never rolled back, INV-NTF-5) or moved to another delivery cycle, in which
 * case the stale answer is dropped. The outcome and its event commit together.
 */
export async function reapplyOutcome(
  deps: DeliveryDeps,
  row: ClaimedRow,
  result: SendResult,
  configs: ChannelConfigs,
  source: SendSource,
  now: Date,
): Promise<ReapplyResult> {
  const { r, decision } = await deps.db.transaction(async (tx) => {
    const state = await lockDeliveryState(tx, row.id);
    if (!state) return { r: { outcome: 'gone', raced: false } as ReapplyResult, decision: null };
    const raced = state.version !== row.version;
    const sameCycle = state.deliveryCycle === row.deliveryCycle;
    const decision: AttemptDecision = sameCycle ? decideAttempt(state, result, channelPolicy(configs, row.channel), now) : { kind: 'discard' };
    if (decision.kind === 'discard' || decision.kind === 'skip') return { r: { outcome: 'discarded', raced } as ReapplyResult, decision: null };
    await writeOutcomes(tx, [writeOf(row, state.version, decision)], now);
    if (endsCycle(decision)) await enqueue(tx, dispatchedEvent(cycleOutcomeOf(row, decision), now));
    if (decision.kind === 'terminal' && decision.code === NTF.pushTokenInvalid && row.recipientAddress) {
      await deletePushTokens(tx, [row.recipientAddress]);
    }
    return { r: { outcome: decision.kind, raced } as ReapplyResult, decision };
  });
  if (decision) observeOutcome(deps, row, decision, source);
  if (r.raced) deps.metrics.versionConflicts.inc({ writer: 'worker', resolution: r.outcome === 'discarded' ? 'discarded' : 'reapplied' });
  return r;
}
