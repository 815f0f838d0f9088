import type pg from 'pg';
import type { JobContext, JobDefinition } from '../../platform/jobs/types.ts';
import type { Registry } from '../../platform/observability/metrics.ts';
import { closeLockedSessions, closeLockedViews, type ClosedRows } from './close.ts';
import { closerMetrics } from './closer-metrics.ts';
import type { Db, Queryable } from '../../platform/db/index.ts';
import { inTransaction } from './db.ts';
import { errorSummary } from './errors.ts';
import { inactivityCutoff, validateCloserOptions, type ActivityCloserOptions } from './rules.ts';
import { claimStaleSession, claimStaleSessions, countIdleActiveSessions, staleSessionIds, type SessionRow } from './session-sql.ts';
import { claimHangingView, claimHangingViews, countIdleActiveViews, hangingViewIds, type OwnedViewRow } from './view-sql.ts';

export const ACTIVITY_CLOSER_JOB = 'activity-closer';

export type CloserContext = Pick<JobContext, 'jobRunId' | 'signal' | 'log' | 'now'>;

export interface CloserCounts {
  [name: string]: number;
  closedSessions: number;
  closedViews: number;
  /** Rows that failed to close in this run; they stay Active for the next tick. */
  failed: number;
  /** Active rows still idle past this run's cutoff when it ended (locked elsewhere, failed, or left by MaxRunDuration). */
  backlogRemaining: number;
}

type Phase = 'hanging_views' | 'stale_sessions';

interface Run {
  ctx: CloserContext;
  cutoff: Date;
  deadline: number;
  counts: CloserCounts;
  /** Rows that failed in this run: not claimed again until the next tick (no retry loop inside a run). */
  failed: Record<Phase, Set<string>>;
  announced: boolean;
}

interface BatchOutcome {
  claimed: number;
  closedSessions: number;
  closedViews: number;
  /** Rows of the batch that failed on their own (row-by-row fallback). */
  failed: number;
}

type Closed = Pick<ClosedRows, 'sessions' | 'views'>;
const NOTHING_CLOSED: Closed = { sessions: [], views: [] };

/** What differs between the two phases: which rows they claim and how they close them. */
interface PhaseSteps<R extends { id: string }> {
  name: Phase;
  type: 'Session' | 'PropertyObjectView';
  claimBatch(c: Queryable, cutoff: Date, limit: number, exclude: readonly string[]): Promise<R[]>;
  claimOne(c: Queryable, id: string, cutoff: Date): Promise<R | undefined>;
  /** Ids of a batch whose claim itself failed, read without locks for the one-by-one redo. */
  candidateIds(c: Queryable, cutoff: Date, limit: number, exclude: readonly string[]): Promise<string[]>;
  close(c: Queryable, tx: Db, rows: readonly R[], now: Date, correlationId: string): Promise<Closed>;
}

/** Phase A: hanging views of live sessions; their sessions stay Active. */
const HANGING_VIEWS: PhaseSteps<OwnedViewRow> = {
  name: 'hanging_views',
  type: 'PropertyObjectView',
  claimBatch: claimHangingViews,
  claimOne: claimHangingView,
  candidateIds: hangingViewIds,
  close: async (c, tx, rows, now, correlationId) => ({ sessions: [], views: await closeLockedViews(c, tx, rows, now, correlationId) }),
};

/** Phase B: stale sessions with all their open views. */
const STALE_SESSIONS: PhaseSteps<SessionRow> = {
  name: 'stale_sessions',
  type: 'Session',
  claimBatch: claimStaleSessions,
  claimOne: claimStaleSession,
  candidateIds: staleSessionIds,
  close: (c, tx, rows, now, correlationId) => closeLockedSessions(c, tx, rows, now, 'Inactivity', correlationId),
};

/**
 * ActivityCloserJob (seed 001): closes idle property-object views and sessions.
 * Phase A closes hanging views of live sessions, one transaction per batch; phase B closes stale
 * sessions with all their open views and events. Phase B runs a whole batch of sessions in one
 * transaction — each session's unit (session + views + outbox rows) stays atomic within it — and
 * if that transaction fails, the batch is redone one transaction per session, so a failing session
 * is logged, stays Active and undoes no other (DESIGN "Batching"). Batches repeat while full, until
 * MaxRunDuration; the stop signal is honoured between batches and between rows, never inside a
 * transaction.
 */
export function createActivityCloser(deps: { pool: pg.Pool; registry: Registry; options: ActivityCloserOptions }) {
  const { pool } = deps;
  const options = validateCloserOptions(deps.options);
  const metrics = closerMetrics(deps.registry);

  const stopping = (run: Run) => run.ctx.signal.aborted || run.ctx.now().getTime() >= run.deadline;

  function announce(run: Run): void {
    if (run.announced) return;
    run.announced = true;
    // Logged lazily so an idle run stays at debug (DESIGN "Observability").
    run.ctx.log.info({ cutoff: run.cutoff.toISOString() }, 'job started');
  }

  function recordClosed(run: Run, now: Date, sessions: readonly { lastActivityAt: Date }[], views: readonly { lastActivityAt: Date }[]) {
    run.counts.closedSessions += sessions.length;
    run.counts.closedViews += views.length;
    metrics.sessionsClosed.inc(sessions.length);
    metrics.viewsClosed.inc(views.length);
    for (const s of sessions) metrics.closeLag.observe({ entity: 'session' }, (now.getTime() - s.lastActivityAt.getTime()) / 1000);
    for (const v of views) metrics.closeLag.observe({ entity: 'view' }, (now.getTime() - v.lastActivityAt.getTime()) / 1000);
  }

  function recordFailure(run: Run, phase: Phase, id: string, type: 'Session' | 'PropertyObjectView', err: unknown, outcome: BatchOutcome): void {
    announce(run);
    outcome.failed += 1;
    run.failed[phase].add(id);
    run.counts.failed += 1;
    metrics.errors.inc({ phase });
    run.ctx.log.error({ phase, id, type, err: errorSummary(err) }, 'item failed');
  }

  function logBatch(run: Run, phase: Phase, outcome: BatchOutcome): void {
    const closed = outcome.closedSessions + outcome.closedViews;
    if (outcome.claimed === 0 && closed === 0) return;
    announce(run);
    run.ctx.log.info(
      { phase, rows: outcome.claimed, closed, closedSessions: outcome.closedSessions, closedViews: outcome.closedViews, failed: outcome.failed },
      'batch processed',
    );
  }

  /** Claims, one row at a time, the rows of a failed batch, so one bad row undoes no other. */
  async function oneByOne<R extends { id: string }>(run: Run, phase: PhaseSteps<R>, ids: readonly string[]): Promise<BatchOutcome> {
    const outcome: BatchOutcome = { claimed: ids.length, closedSessions: 0, closedViews: 0, failed: 0 };
    for (const id of ids) {
      if (run.ctx.signal.aborted) break;
      const now = run.ctx.now();
      try {
        const closed = await inTransaction(pool, async (c, tx) => {
          const row = await phase.claimOne(c, id, run.cutoff);
          return row ? phase.close(c, tx, [row], now, run.ctx.jobRunId) : NOTHING_CLOSED;
        });
        recordClosed(run, now, closed.sessions, closed.views);
        outcome.closedSessions += closed.sessions.length;
        outcome.closedViews += closed.views.length;
      } catch (err) {
        recordFailure(run, phase.name, id, phase.type, err, outcome);
      }
    }
    return outcome;
  }

  /** One batch in one transaction; if it fails, the same rows are redone one by one. */
  async function batchOf<R extends { id: string }>(run: Run, phase: PhaseSteps<R>): Promise<BatchOutcome> {
    const now = run.ctx.now();
    const exclude = [...run.failed[phase.name]];
    let claimed: R[] = [];
    try {
      const closed = await inTransaction(pool, async (c, tx) => {
        claimed = await phase.claimBatch(c, run.cutoff, options.batchSize, exclude);
        return phase.close(c, tx, claimed, now, run.ctx.jobRunId);
      });
      recordClosed(run, now, closed.sessions, closed.views);
      return { claimed: claimed.length, closedSessions: closed.sessions.length, closedViews: closed.views.length, failed: 0 };
    } catch (err) {
      const ids = claimed.length > 0 ? claimed.map((r) => r.id) : await phase.candidateIds(pool, run.cutoff, options.batchSize, exclude);
      run.ctx.log.warn({ phase: phase.name, rows: ids.length, err: errorSummary(err) }, 'batch failed, closing its rows one by one');
      return oneByOne(run, phase, ids);
    }
  }

  async function runPhase<R extends { id: string }>(run: Run, phase: PhaseSteps<R>): Promise<void> {
    while (!stopping(run)) {
      const outcome = await batchOf(run, phase);
      logBatch(run, phase.name, outcome);
      if (outcome.claimed < options.batchSize) break;
      if (outcome.failed > 1 && outcome.failed === outcome.claimed) {
        // Every row of a full batch failed on its own: the cause is not one row (database, schema,
        // outbox). Stop the phase instead of logging one failure per stale row; the next tick retries.
        run.ctx.log.warn({ phase: phase.name, failed: outcome.failed }, 'every row of the batch failed; phase stopped until the next tick');
        break;
      }
    }
  }

  /** One run: phase A, then phase B (INV-LV-007: an Inactive session keeps no Active view). */
  async function closeIdle(ctx: CloserContext): Promise<CloserCounts> {
    const t0 = performance.now();
    const startedAt = ctx.now();
    const run: Run = {
      ctx,
      cutoff: inactivityCutoff(startedAt, options.inactivityThresholdMs),
      deadline: startedAt.getTime() + options.maxRunDurationMs,
      counts: { closedSessions: 0, closedViews: 0, failed: 0, backlogRemaining: 0 },
      failed: { hanging_views: new Set(), stale_sessions: new Set() },
      announced: false,
    };
    ctx.log.debug({ cutoff: run.cutoff.toISOString() }, 'job started');
    try {
      await runPhase(run, HANGING_VIEWS);
      await runPhase(run, STALE_SESSIONS);
    } finally {
      metrics.runDuration.observe(performance.now() - t0);
    }
    run.counts.backlogRemaining = (await countIdleActiveSessions(pool, run.cutoff)) + (await countIdleActiveViews(pool, run.cutoff));
    metrics.backlog.set(run.counts.backlogRemaining);
    const durationMs = Math.round(performance.now() - t0);
    const idle = run.counts.closedSessions + run.counts.closedViews + run.counts.failed === 0;
    const line = { ...run.counts, durationMs, cutoff: run.cutoff.toISOString(), aborted: ctx.signal.aborted };
    if (idle) ctx.log.debug(line, 'job completed');
    else ctx.log.info(line, 'job completed');
    return run.counts;
  }

  return { closeIdle, options };
}

export type ActivityCloser = ReturnType<typeof createActivityCloser>;

/** The closer as a recurring job. Not single-runner: SKIP LOCKED lets replicas share the work (seed 001). */
export function activityCloserJob(closer: ActivityCloser): JobDefinition {
  return {
    name: ACTIVITY_CLOSER_JOB,
    every: closer.options.pollingIntervalMs,
    run: (ctx) => closer.closeIdle(ctx),
  };
}
