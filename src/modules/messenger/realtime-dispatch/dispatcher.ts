import type pg from 'pg';
import type { JobContext } from '../../../platform/jobs/index.ts';
import type { Logger } from '../../../platform/observability/index.ts';
import type { Hub } from '../../../platform/realtime/index.ts';
import type { MediaJoinMinter } from '../calls/media-join.ts';
import type { RealtimeMetrics } from './metrics.ts';
import { loadRefs } from './refs.ts';
import { backoffScheduleMs, errorText, outcomeOf, pushOrder, type DispatchSettings, type PushResult, type RowOutcome } from './rules.ts';
import { claimDue, recordOutcomes, type ClaimedRow, type OutcomeUpdate } from './outbox-sql.ts';
import { buildDelivery, type RealtimeRefs } from './payloads.ts';

/** Internal alert (log + metric), never a Kafka event. */
export interface RealtimeDispatchQuarantinedEvent {
  OutboxEntryId: string;
  Kind: string;
  ChatId: string | null;
  Attempts: number;
}

export interface RealtimeDispatcherDeps {
  pool: pg.Pool;
  hub: Pick<Hub, 'send' | 'addUserToGroup' | 'removeUserFromGroup'>;
  metrics: RealtimeMetrics;
  log: Logger;
  mintJoin: MediaJoinMinter;
  settings: DispatchSettings;
  onQuarantined?: (event: RealtimeDispatchQuarantinedEvent) => void;
}

export interface DispatchCounts {
  claimed: number;
  dispatched: number;
  retried: number;
  quarantined: number;
  /** Claimed but not pushed because the run was stopped: given back, claimable at once. */
  released: number;
  /** Outcomes that did not land: the row was requeued or re-claimed meanwhile (RowVersion moved). */
  overtaken: number;
}

export interface RealtimeDispatcher {
  runOnce(ctx: Pick<JobContext, 'signal' | 'now' | 'woken' | 'waitForWake'> & { log?: Logger }): Promise<DispatchCounts>;
}

const zero = (): DispatchCounts => ({ claimed: 0, dispatched: 0, retried: 0, quarantined: 0, released: 0, overtaken: 0 });

/**
 * RealtimeDispatchJob's work (seed 000): bounded batches of claim (one statement: SKIP LOCKED,
 * Attempts + 1, NextAttemptAt by backoff) → build and push each row outside any transaction, in id
 * order, stopping between rows when asked → record the batch's outcomes set-based, each guarded by
 * the RowVersion its claim left. Repeats while batches come back full, or a wake (NOTIFY of newly
 * committed rows) arrived meanwhile or within idleWaitMs, and MaxRunDuration allows.
 */
export function createRealtimeDispatcher(deps: RealtimeDispatcherDeps): RealtimeDispatcher {
  const { settings, metrics } = deps;

  function alert(row: ClaimedRow, attempts: number, reason: string, log: Logger): void {
    const event: RealtimeDispatchQuarantinedEvent = { OutboxEntryId: row.id, Kind: row.kind, ChatId: row.chatId, Attempts: attempts };
    metrics.quarantined.inc({ kind: row.kind, reason });
    log.error({ entryId: row.id, kind: row.kind, chatId: row.chatId, attempts, reason, event: 'RealtimeDispatchQuarantinedEvent' }, 'realtime outbox row quarantined');
    deps.onQuarantined?.(event);
  }

  const delaysMs = backoffScheduleMs(settings.backoff, settings.maxAttempts);

  /** One statement: lock due rows, pre-increment, and quarantine those already out of attempts. */
  async function claim(now: Date, exclude: readonly string[]): Promise<{ rows: ClaimedRow[]; exhausted: ClaimedRow[] }> {
    const claimed = await claimDue(deps.pool, { now, limit: settings.batchSize, maxAttempts: settings.maxAttempts, delaysMs, jitter: settings.backoff.jitter, exclude });
    return { rows: claimed.filter((r) => !r.exhausted), exhausted: claimed.filter((r) => r.exhausted) };
  }

  async function push(row: ClaimedRow, refs: RealtimeRefs): Promise<PushResult> {
    try {
      const built = buildDelivery(row, refs);
      if (!built.ok) return { kind: 'missing', code: built.code };
      const { membership, sends } = built.delivery;
      for (const m of membership ?? []) {
        if (m.op === 'join') await deps.hub.addUserToGroup(m.userId, m.group);
        else await deps.hub.removeUserFromGroup(m.userId, m.group);
      }
      for (const s of sends) {
        const payload = s.joinFor ? { ...s.payload, Join: await deps.mintJoin(s.joinFor) } : s.payload;
        await deps.hub.send(s.group, s.event, payload);
      }
      return { kind: 'delivered' };
    } catch (err) {
      return { kind: 'transient', error: errorText(err) };
    }
  }

  const toUpdate = (row: ClaimedRow, o: RowOutcome, now: Date): OutcomeUpdate => ({
    id: row.id,
    rowVersion: row.rowVersion,
    status: o.status === 'Released' ? 'Pending' : o.status,
    lastError: 'lastError' in o ? o.lastError : null,
    attemptsDelta: o.status === 'Released' ? -1 : 0,
    nextAttemptAt: o.status === 'Released' ? now : null,
  });

  /** Set-based; if that statement fails, row by row, so one bad row never undoes the others. */
  async function record(updates: OutcomeUpdate[], now: Date, log: Logger): Promise<Set<string>> {
    try {
      return await recordOutcomes(deps.pool, updates, now);
    } catch (err) {
      log.warn({ err: { message: (err as Error).message }, rows: updates.length }, 'realtime outcomes: batch update failed; recording row by row');
      const landed = new Set<string>();
      for (const u of updates) {
        try {
          for (const id of await recordOutcomes(deps.pool, [u], now)) landed.add(id);
        } catch (rowErr) {
          log.error({ err: { message: (rowErr as Error).message }, entryId: u.id }, 'realtime outcome could not be recorded; the row is retried after its backoff');
        }
      }
      return landed;
    }
  }

  /** Builds and pushes each row outside any transaction, in push order, stopping between rows when asked. */
  async function pushBatch(rows: ClaimedRow[], ctx: { signal: AbortSignal }): Promise<{ rows: ClaimedRow[]; results: PushResult[] }> {
    rows = pushOrder(rows);
    const refs = await loadRefs(deps.pool, rows);
    const results: PushResult[] = [];
    for (const row of rows) results.push(ctx.signal.aborted ? { kind: 'skipped' } : await push(row, refs));
    return { rows, results };
  }

  /** Records a pushed batch's outcomes (RowVersion-guarded, set-based) and counts, logs and alerts them. */
  async function settle(batch: { rows: ClaimedRow[]; results: PushResult[] }, now: Date, log: Logger, counts: DispatchCounts): Promise<void> {
    const { rows, results } = batch;
    const outcomes = rows.map((row, i) => outcomeOf(results[i]!, row.attempts, settings.maxAttempts));
    const landed = await record(
      rows.map((row, i) => toUpdate(row, outcomes[i]!, now)),
      now,
      log,
    );
    // Per row on the hot path: count per kind and increment once; build log lines only when logged.
    const dispatchedByKind = new Map<string, number>();
    const logDispatched = log.isLevelEnabled('info');
    rows.forEach((row, i) => {
      const outcome = outcomes[i]!;
      const result = results[i]!;
      if (!landed.has(row.id)) {
        counts.overtaken++;
        log.debug({ entryId: row.id, kind: row.kind }, 'realtime outcome not recorded: the row changed since its claim');
        return;
      }
      if (outcome.status === 'Done') {
        counts.dispatched++;
        dispatchedByKind.set(row.kind, (dispatchedByKind.get(row.kind) ?? 0) + 1);
        metrics.lag.observe({ kind: row.kind }, Math.max(0, (now.getTime() - row.createdAt.getTime()) / 1000));
        if (logDispatched) log.info({ kind: row.kind, chatId: row.chatId, targetUserId: row.targetUserId, seq: row.seq, attempts: row.attempts }, 'realtime dispatched');
      } else if (outcome.status === 'Pending') {
        counts.retried++;
        metrics.retried.inc({ kind: row.kind });
        log.warn({ entryId: row.id, kind: row.kind, attempts: row.attempts, errorCode: outcome.lastError }, 'realtime dispatch retry');
      } else if (outcome.status === 'Quarantined') {
        counts.quarantined++;
        alert(row, row.attempts, result.kind === 'missing' ? 'ref_not_found' : 'attempts_exhausted', log);
      } else {
        counts.released++;
      }
    });
    for (const [kind, n] of dispatchedByKind) metrics.dispatched.inc({ kind }, n);
  }

  return {
    async runOnce(ctx) {
      const log = ctx.log ?? deps.log;
      const started = performance.now();
      const counts = zero();
      // The outcomes of the last pushed batch are recorded while the next batch is claimed and
      // pushed; that claim leaves the batch's rows alone, so each row still has its claim, then its
      // outcome. At most one batch's outcomes are in flight; all have landed when the run ends.
      let settling: Promise<void> | undefined;
      let inFlight: string[] = [];
      try {
        while (!ctx.signal.aborted) {
          const { rows, exhausted } = await claim(ctx.now(), inFlight);
          const claimedNow = rows.length + exhausted.length;
          if (claimedNow > 0) {
            counts.claimed += claimedNow;
            log.info({ rows: claimedNow }, 'realtime batch claimed');
          }
          for (const row of exhausted) {
            counts.quarantined++;
            alert(row, row.attempts, 'attempts_exhausted', log);
          }
          if (rows.length > 0) {
            const pushed = await pushBatch(rows, ctx);
            await settling;
            inFlight = rows.map((r) => r.id);
            settling = settle(pushed, ctx.now(), log, counts);
          }
          const left = settings.maxRunDurationMs - (performance.now() - started);
          if (left <= 0) break;
          // A full batch leaves more behind; a wake since the last claim announces rows committed
          // after it: claim again now rather than end and be started again by that wake. With
          // nothing announced, stay a little for the next commit, so a steady stream of sends is
          // served by one run rather than a run (lock, job_state) per commit.
          if (claimedNow >= settings.batchSize || ctx.woken?.()) continue;
          if (settings.idleWaitMs && ctx.waitForWake && (await ctx.waitForWake(Math.min(settings.idleWaitMs, left)))) continue;
          break;
        }
      } finally {
        await settling;
      }
      if (counts.claimed > 0) {
        const { dispatched, retried, quarantined } = counts;
        log.info({ dispatched, retried, quarantined, durationMs: Math.round(performance.now() - started) }, 'realtime dispatch completed');
      }
      return counts;
    },
  };
}
