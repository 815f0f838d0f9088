import { enqueue } from '../../../platform/outbox/enqueue.ts';
import { channelPolicy, type ChannelConfigs } from '../channels.ts';
import { dispatchedEvent } from '../events.ts';
import type { SendSource } from '../metrics.ts';
import { NTF } from '../model.ts';
import { cycleOutcomeOf, deliveryOf, observeOutcome, writeOf, type DeliveryDeps } from './outcomes.ts';
import { reapplyOutcome } from './reapply.ts';
import { decideAttempt, endsCycle, type AttemptDecision, type SendResult } from './rules.ts';
import { deletePushTokens, releaseLeases, writeOutcomes, type ClaimedRow } from './sql.ts';

export type { DeliveryDeps };

/** How long sends in flight may finish after a stop is asked (the shutdown budget is 10 s). */
const STOP_GRACE_MS = 3000;

export interface BatchCounts {
  claimed: number;
  sent: number;
  retried: number;
  terminal: number;
  skipped: number;
  discarded: number;
  conflicts: number;
  released: number;
}

export const emptyCounts = (): BatchCounts => ({ claimed: 0, sent: 0, retried: 0, terminal: 0, skipped: 0, discarded: 0, conflicts: 0, released: 0 });

export function addCounts(into: BatchCounts, more: BatchCounts): BatchCounts {
  for (const k of Object.keys(into) as (keyof BatchCounts)[]) into[k] += more[k];
  return into;
}

/** One sent row: what the provider said and what it does to the row. */
export interface Attempt {
  row: ClaimedRow;
  result: SendResult;
}

/** Runs `fn` over the items with at most `limit` in flight; stops starting new ones once `signal` aborts. */
async function forEachConcurrently<T>(items: T[], limit: number, signal: AbortSignal, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length && !signal.aborted) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/**
 * Sends claimed rows through their channel's adapter (outside any transaction), then records the
 * batch: one transaction writes every outcome set-based, with the NotificationDispatchedEvent of
 * each cycle-ending outcome in the same transaction (one notification with its event is the unit).
 * A row that lost an optimistic-version race is re-read and its outcome re-applied unless the row
 * became final (A5). If the batch statement fails, rows are recorded one by one.
 */
export async function deliverClaimed(
  deps: DeliveryDeps,
  rows: ClaimedRow[],
  configs: ChannelConfigs,
  ctx: { source: SendSource; leaseOwner: string; signal: AbortSignal; now(): Date },
): Promise<BatchCounts> {
  const counts = emptyCounts();
  counts.claimed = rows.length;
  const attempts: Attempt[] = [];
  // On stop, no new sends start; the ones in flight get a short grace before they are cut off (a cut
  // send that the provider accepted is the A4 case: the next cycle's resend is deduped).
  const cutOff = new AbortController();
  const onStop = () => setTimeout(() => cutOff.abort(new Error('worker stopping')), STOP_GRACE_MS).unref();
  ctx.signal.addEventListener('abort', onStop, { once: true });
  try {
    await forEachConcurrently(rows, deps.concurrency, ctx.signal, async (row) => {
      attempts.push({ row, result: await send(deps, configs, row, cutOff.signal) });
    });
  } finally {
    ctx.signal.removeEventListener('abort', onStop);
  }
  const done = new Set(attempts.map((a) => a.row.id));
  const unsent = rows.filter((r) => !done.has(r.id)).map((r) => r.id);

  const now = ctx.now();
  const decided = attempts.map((a) => ({ ...a, decision: decideAttempt(a.row, a.result, channelPolicy(configs, a.row.channel), now) }));
  const skipped = decided.filter((d) => d.decision.kind === 'skip').map((d) => d.row.id);
  const writes = decided.filter((d) => d.decision.kind !== 'skip' && d.decision.kind !== 'discard');
  for (const d of decided) {
    if (d.decision.kind === 'skip') {
      counts.skipped++;
      deps.metrics.skipped.inc({ channel: d.row.channel, reason: 'provider_not_implemented' });
      deps.metrics.attempts.inc({ channel: d.row.channel, source: ctx.source, outcome: 'skipped' });
    } else if (d.decision.kind === 'discard') counts.discarded++;
  }

  let lost: typeof writes = [];
  try {
    lost = await recordBatch(deps, writes, ctx.source, now, counts);
  } catch (err) {
    deps.log.warn({ err, rows: writes.length }, 'recording the batch failed; recording its rows one by one');
    lost = writes;
  }
  for (const w of lost) {
    const r = await reapplyOutcome(deps, w.row, w.result, configs, ctx.source, ctx.now()).catch((err: unknown) => {
      deps.log.error({ err, notificationId: w.row.id }, 'notification outcome could not be recorded; it is retried after its lease');
      return { outcome: 'failed' as const, raced: false };
    });
    if (r.raced) counts.conflicts++;
    if (r.outcome === 'discarded') counts.discarded++;
    else if (r.outcome === 'sent' || r.outcome === 'retry' || r.outcome === 'terminal') tally(counts, r.outcome);
  }
  const release = [...unsent, ...skipped];
  if (release.length > 0) {
    await releaseLeases(deps.pool, release, ctx.leaseOwner).catch((err: unknown) => deps.log.warn({ err }, 'leases not released; they expire'));
    counts.released = unsent.length;
  }
  return counts;
}

function tally(counts: BatchCounts, kind: 'sent' | 'retry' | 'terminal'): void {
  if (kind === 'sent') counts.sent++;
  else if (kind === 'retry') counts.retried++;
  else counts.terminal++;
}

async function send(deps: DeliveryDeps, configs: ChannelConfigs, row: ClaimedRow, cutOff: AbortSignal): Promise<SendResult> {
  const key = configs.get(row.channel)?.providerKey ?? '';
  const provider = deps.providers.get(key);
  if (!provider || deps.providers.state(key) !== 'available') return { ok: false, code: NTF.notImplemented };
  const end = deps.metrics.sendDuration.startTimer({ provider: key });
  try {
    return await provider.send(deliveryOf(row), AbortSignal.any([cutOff, AbortSignal.timeout(deps.hardTimeoutMs)]));
  } catch (err) {
    deps.log.warn({ err, notificationId: row.id, provider: key }, 'provider adapter threw; counted as transient');
    return { ok: false, code: NTF.transient };
  } finally {
    end();
  }
}

type Decided = Attempt & { decision: AttemptDecision };

/** The set-based write plus events; returns the rows that lost a version race. */
async function recordBatch(deps: DeliveryDeps, writes: Decided[], source: SendSource, now: Date, counts: BatchCounts): Promise<Decided[]> {
  if (writes.length === 0) return [];
  const applied = await deps.db.transaction(async (tx) => {
    const ids = await writeOutcomes(
      tx,
      writes.map((w) => writeOf(w.row, w.row.version, w.decision as Extract<AttemptDecision, { kind: 'sent' | 'retry' | 'terminal' }>)),
      now,
    );
    const won = writes.filter((w) => ids.has(w.row.id));
    const events = won.filter((w) => endsCycle(w.decision)).map((w) => dispatchedEvent(cycleOutcomeOf(w.row, w.decision), now));
    await enqueue(tx, events);
    const deadTokens = won.filter((w) => w.decision.kind === 'terminal' && w.decision.code === NTF.pushTokenInvalid && w.row.recipientAddress);
    await deletePushTokens(tx, deadTokens.map((w) => w.row.recipientAddress!));
    return won;
  });
  for (const w of applied) {
    tally(counts, w.decision.kind as 'sent' | 'retry' | 'terminal');
    observeOutcome(deps, w.row, w.decision, source);
  }
  const appliedIds = new Set(applied.map((w) => w.row.id));
  return writes.filter((w) => !appliedIds.has(w.row.id));
}

