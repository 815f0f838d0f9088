import type { Db } from '../../../platform/db/index.ts';
import { batchPhase, defineBatchWorker, type BatchPhase, type BatchRun, type BatchWorker } from '../../../platform/jobs/index.ts';
import { spanAttributes, type Registry } from '../../../platform/observability/index.ts';
import { closeLockedSessions, closeLockedViews } from './close.ts';
import { closerMetrics, type CloserMetrics } from './closer-metrics.ts';
import type { ClosedSession, ClosedView } from '../events.ts';
import { inactivityCutoff } from '../rules.ts';
import { defaultsOf } from '../../../platform/types/index.ts';
import { activityCloserSettings, type ActivityCloserSettings } from '../settings.ts';
import { claimStaleSessions, countIdleActiveSessions, type SessionRow, type StaleScope } from '../sessions/session-sql.ts';
import { claimHangingViews, countIdleActiveViews, type OwnedViewRow } from '../views/view-sql.ts';

export const ACTIVITY_CLOSER_JOB = 'activity-closer';

/** The closer's defaults, as its settings declare them (tests and benchmarks start from these). */
export const DEFAULT_CLOSER_SETTINGS: ActivityCloserSettings = defaultsOf(activityCloserSettings);

/** The seed's InactivityThreshold in milliseconds. */
export const inactivityThresholdMs = (s: ActivityCloserSettings): number => s.USER_ACTIVITY_INACTIVITY_THRESHOLD;

type PhaseName = 'hanging_views' | 'stale_sessions';

/** One closed unit of work: a hanging view (phase A), or a stale session with its views (phase B). */
interface Closed {
  id: string;
  sessions: readonly ClosedSession[];
  views: readonly ClosedView[];
}

/** What differs between the two phases: which rows they claim and how they close them. */
interface PhaseSteps<R> {
  name: PhaseName;
  /** The seed's Type of the phase's rows, on their log lines. */
  type: 'PropertyObjectView' | 'Session';
  /** The phase's one claim: a batch, the one row of the redo, or (lock: false) the ids a failed batch would take. */
  claim(db: Db, scope: StaleScope): Promise<(R & { id: string })[]>;
  close(tx: Db, rows: readonly R[], now: Date, correlationId: string): Promise<Closed[]>;
}

/** Phase A: hanging views of live sessions, one transaction per batch; their sessions stay Active (INV-LV-004). */
const HANGING_VIEWS: PhaseSteps<OwnedViewRow> = {
  name: 'hanging_views',
  type: 'PropertyObjectView',
  claim: claimHangingViews,
  close: async (tx, rows, now, correlationId) =>
    (await closeLockedViews(tx, rows, now, correlationId)).map((v) => ({ id: v.id, sessions: [], views: [v] })),
};

/**
 * Phase B: stale sessions with all their open views and events. A batch of sessions goes in one
 * transaction; each session's unit (session + views + outbox rows, INV-SES-005) stays atomic in it,
 * and the kernel's one-by-one redo gives each session its own transaction when the batch fails.
 */
const STALE_SESSIONS: PhaseSteps<SessionRow> = {
  name: 'stale_sessions',
  type: 'Session',
  claim: claimStaleSessions,
  async close(tx, rows, now, correlationId) {
    const closed = await closeLockedSessions(tx, rows, now, 'Inactivity', correlationId);
    const viewsOf = Map.groupBy(closed.views, (v) => v.sessionId);
    return closed.sessions.map((s) => ({ id: s.id, sessions: [s], views: viewsOf.get(s.id) ?? [] }));
  },
};

/** What one run keeps: step 1's cutoff. */
interface CloserRun {
  cutoff: Date;
}

/**
 * ActivityCloserJob (seed 001): closes idle property-object views and sessions, one run per
 * PollingInterval. Not single-runner: FOR UPDATE SKIP LOCKED lets replicas share the work.
 *
 *   1. context: correlationId = jobRunId, cutoff = now − InactivityThreshold;
 *   2. phase A, then phase B (an Inactive session keeps no Active view, INV-LV-007): each batch
 *      claims its rows FOR UPDATE SKIP LOCKED and closes them with their ended-events in one
 *      transaction; a failed batch is redone one row per transaction, so a failing row is logged,
 *      stays Active for the next tick and undoes no other;
 *   3. the run's counts and close lag per batch; the kernel logs the seed's lines (job started,
 *      batch processed, job completed), feeds the run duration, the error counter and the backlog
 *      gauge, and ends the run at MaxRunDuration.
 *
 * `settings` are loadConfig's, validated at start.
 */
export function createActivityCloser(deps: { db: Db; registry: Registry; settings: ActivityCloserSettings }): BatchWorker {
  const { db, settings } = deps;
  const metrics = closerMetrics(deps.registry);

  function closingPhase<R>(steps: PhaseSteps<R>, { cutoff }: CloserRun): BatchPhase<Closed> {
    const inOneTransaction = (run: BatchRun, claim: (tx: Db) => Promise<readonly R[]>) =>
      db.transaction(async (tx) => {
        const now = run.now();
        const rows = await claim(tx);
        return rows.length === 0 ? [] : steps.close(tx, rows, now, run.jobRunId);
      });
    return batchPhase<Closed>({
      name: steps.name,
      logFields: { type: steps.type },
      claim: (limit, run, exclude) => inOneTransaction(run, (tx) => steps.claim(tx, { cutoff, limit, exclude })),
      oneByOne: {
        candidates: async (limit, _run, exclude) => (await steps.claim(db, { cutoff, limit, exclude, lock: false })).map((r) => r.id),
        // The kernel logs a failure ("item failed"), counts it and leaves the row out of the rest of the run.
        claimOne: (id, run) => inOneTransaction(run, (tx) => steps.claim(tx, { cutoff, limit: 1, id })),
      },
      async record(outcomes, run) {
        const closed = outcomes.map((o) => o.row);
        recordClosed(metrics, run, closed.flatMap((c) => c.sessions), closed.flatMap((c) => c.views));
      },
      batchLine(outcomes) {
        const sessions = outcomes.reduce((n, o) => n + o.row.sessions.length, 0);
        const views = outcomes.reduce((n, o) => n + o.row.views.length, 0);
        spanAttributes({ closedCount: sessions + views }); // seed 001 "Traces", on the batch's span
        return { closed: sessions + views, closedSessions: sessions, closedViews: views };
      },
    });
  }

  return defineBatchWorker<CloserRun>({
    name: ACTIVITY_CLOSER_JOB,
    every: settings.USER_ACTIVITY_CLOSER_POLLING_INTERVAL,
    settings: { batchSize: settings.USER_ACTIVITY_CLOSER_BATCH_SIZE, maxRunMs: settings.USER_ACTIVITY_CLOSER_MAX_RUN_DURATION },
    counts: ['closedSessions', 'closedViews'],
    metrics: { durationMs: metrics.runDuration, errors: metrics.errors, backlog: metrics.backlog },
    start: (run) => ({ cutoff: inactivityCutoff(run.now(), inactivityThresholdMs(settings)) }),
    runFields: ({ cutoff }) => ({ cutoff: cutoff.toISOString() }),
    phases: (_run, state) => [closingPhase(HANGING_VIEWS, state), closingPhase(STALE_SESSIONS, state)],
    // Active rows still idle past this run's cutoff: locked elsewhere, failed, or left by MaxRunDuration.
    backlog: async (_run, { cutoff }) => (await countIdleActiveSessions(db, cutoff)) + (await countIdleActiveViews(db, cutoff)),
  });
}

/** The run's counts and the seed's counters and close lag (now − LastActivityAt at the close). */
function recordClosed(metrics: CloserMetrics, run: BatchRun, sessions: readonly ClosedSession[], views: readonly ClosedView[]): void {
  run.count('closedSessions', sessions.length);
  run.count('closedViews', views.length);
  metrics.sessionsClosed.inc(sessions.length);
  metrics.viewsClosed.inc(views.length);
  for (const s of sessions) metrics.closeLag.observe({ entity: 'session' }, (s.endedAt.getTime() - s.lastActivityAt.getTime()) / 1000);
  for (const v of views) metrics.closeLag.observe({ entity: 'view' }, (v.endedAt.getTime() - v.lastActivityAt.getTime()) / 1000);
}
