import type pg from 'pg';
import type { JobContext } from '../../platform/jobs/types.ts';
import type { Logger } from '../../platform/observability/logger.ts';
import type { Hub } from '../../platform/realtime/index.ts';
import type { MediaJoinMinter } from './calls-media-join.ts';
import type { RealtimeMetrics } from './realtime-outbox-metrics.ts';
import { loadRefs } from './realtime-outbox-refs.ts';
import { backoffScheduleMs, errorText, outcomeOf, pushOrder, type DispatchSettings, type PushResult, type RowOutcome } from './realtime-outbox-rules.ts';
import { claimDue, recordOutcomes, type ClaimedRow, type OutcomeUpdate } from './realtime-outbox-sql.ts';
import { buildDelivery, type RealtimeRefs } from './realtime-payloads.ts';

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
  runOnce(ctx: Pick<JobContext, 'signal' | 'now'> & { log?: Logger }): Promise<DispatchCounts>;
}

const zero = (): DispatchCounts => ({ claimed: 0, dispatched: 0, retried: 0, quarantined: 0, released: 0, overtaken: 0 });

/**
 * RealtimeDispatchJob's work (seed 000): bounded batches of claim (one statement: SKIP LOCKED,
 * Attempts + 1, NextAttemptAt by backoff) → build and push each row outside any transaction, in id
 * order, stopping between rows when asked → record the batch's outcomes set-based, each guarded by
 * the RowVersion its claim left. Repeats while batches come back full and MaxRunDuration allows.
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
  async function claim(now: Date): Promise<{ rows: ClaimedRow[]; exhausted: ClaimedRow[] }> {
    const claimed = await claimDue(deps.pool, { now, limit: settings.batchSize, maxAttempts: settings.maxAttempts, delaysMs, jitter: settings.backoff.jitter });
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

  async function dispatchBatch(rows: ClaimedRow[], ctx: { signal: AbortSignal; now(): Date }, log: Logger, counts: DispatchCounts): Promise<void> {
    rows = pushOrder(rows);
    const refs = await loadRefs(deps.pool, rows);
    const results: PushResult[] = [];
    for (const row of rows) results.push(ctx.signal.aborted ? { kind: 'skipped' } : await push(row, refs));
    const now = ctx.now();
    const outcomes = rows.map((row, i) => outcomeOf(results[i]!, row.attempts, settings.maxAttempts));
    const landed = await record(
      rows.map((row, i) => toUpdate(row, outcomes[i]!, now)),
      now,
      log,
    );
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
        metrics.dispatched.inc({ kind: row.kind });
        metrics.lag.observe({ kind: row.kind }, Math.max(0, (now.getTime() - row.createdAt.getTime()) / 1000));
        log.info({ kind: row.kind, chatId: row.chatId, targetUserId: row.targetUserId, seq: row.seq, attempts: row.attempts }, 'realtime dispatched');
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
  }

  return {
    async runOnce(ctx) {
      const log = ctx.log ?? deps.log;
      const started = performance.now();
      const counts = zero();
      while (!ctx.signal.aborted) {
        const { rows, exhausted } = await claim(ctx.now());
        const claimedNow = rows.length + exhausted.length;
        if (claimedNow === 0) break;
        counts.claimed += claimedNow;
        log.info({ rows: claimedNow }, 'realtime batch claimed');
        for (const row of exhausted) {
          counts.quarantined++;
          alert(row, row.attempts, 'attempts_exhausted', log);
        }
        if (rows.length > 0) await dispatchBatch(rows, ctx, log, counts);
        if (claimedNow < settings.batchSize || performance.now() - started > settings.maxRunDurationMs) break;
      }
      if (counts.claimed > 0) {
        const { dispatched, retried, quarantined } = counts;
        log.info({ dispatched, retried, quarantined, durationMs: Math.round(performance.now() - started) }, 'realtime dispatch completed');
      }
      return counts;
    },
  };
}
