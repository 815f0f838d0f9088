import type { Db } from '../../../platform/db/index.ts';
import { batchPhase, defineBatchWorker, type BatchPhase, type BatchRun, type BatchWorker } from '../../../platform/jobs/index.ts';
import { spanAttributes, type Registry } from '../../../platform/observability/index.ts';
import { closeLockedSessions, closeLockedViews } from './close.ts';
import { closerMetrics, type CloserMetrics } from './closer-metrics.ts';
import type { ClosedSession, ClosedView } from '../events.ts';
import { inactivityCutoff } from '../rules.ts';
import { defaultsOf, settingsProblems } from '../../../platform/types/index.ts';
import { activityCloserSettings, type ActivityCloserSettings } from '../settings.ts';
import { claimStaleSession, claimStaleSessions, countIdleActiveSessions, staleSessionIds, type SessionRow } from '../sessions/session-sql.ts';
import { claimHangingView, claimHangingViews, countIdleActiveViews, hangingViewIds, type OwnedViewRow } from '../views/view-sql.ts';

export const ACTIVITY_CLOSER_JOB = 'activity-closer';

/** ActivityCloserOptions (seed 001 "Входная модель"), durations in milliseconds. */
export interface ActivityCloserOptions {
  inactivityThresholdMs: number;
  pollingIntervalMs: number;
  batchSize: number;
  maxRunDurationMs: number;
}

/** The one mapping from the closer's settings to its options. */
export const closerOptions = (s: ActivityCloserSettings): ActivityCloserOptions => ({
  inactivityThresholdMs: s.USER_ACTIVITY_INACTIVITY_THRESHOLD,
  pollingIntervalMs: s.USER_ACTIVITY_CLOSER_POLLING_INTERVAL,
  batchSize: s.USER_ACTIVITY_CLOSER_BATCH_SIZE,
  maxRunDurationMs: s.USER_ACTIVITY_CLOSER_MAX_RUN_DURATION,
});

export const DEFAULT_CLOSER_SETTINGS: ActivityCloserSettings = defaultsOf(activityCloserSettings);

/** Every closer setting outside its bounds (InactivityThreshold within [10 min, 15 min], BatchSize > 0, …). */
export const closerSettingsProblems = (s: ActivityCloserSettings): string[] => settingsProblems(activityCloserSettings, s);

export class CloserConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`ActivityCloserJob: invalid settings: ${problems.join('; ')}`);
    this.name = 'CloserConfigError';
    this.problems = problems;
  }
}

/** The host refuses to start on any bad setting (seed 001 step 2), whoever builds the closer. */
export function validateCloserSettings(s: ActivityCloserSettings): ActivityCloserSettings {
  const problems = closerSettingsProblems(s);
  if (problems.length > 0) throw new CloserConfigError(problems);
  return s;
}

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
  claimBatch(db: Db, cutoff: Date, limit: number, exclude: readonly string[]): Promise<R[]>;
  claimOne(db: Db, id: string, cutoff: Date): Promise<R | undefined>;
  /** Ids a batch would take, read without locks, for the one-by-one redo of a failed batch. */
  candidateIds(db: Db, cutoff: Date, limit: number, exclude: readonly string[]): Promise<string[]>;
  close(tx: Db, rows: readonly R[], now: Date, correlationId: string): Promise<Closed[]>;
}

/** Phase A: hanging views of live sessions, one transaction per batch; their sessions stay Active (INV-LV-004). */
const HANGING_VIEWS: PhaseSteps<OwnedViewRow> = {
  name: 'hanging_views',
  type: 'PropertyObjectView',
  claimBatch: claimHangingViews,
  claimOne: claimHangingView,
  candidateIds: hangingViewIds,
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
  claimBatch: claimStaleSessions,
  claimOne: claimStaleSession,
  candidateIds: staleSessionIds,
  async close(tx, rows, now, correlationId) {
    const closed = await closeLockedSessions(tx, rows, now, 'Inactivity', correlationId);
    const viewsOf = Map.groupBy(closed.views, (v) => v.sessionId);
    return closed.sessions.map((s) => ({ id: s.id, sessions: [s], views: viewsOf.get(s.id) ?? [] }));
  },
};

/** What one run keeps beside the kernel's counts. */
interface CloserRun {
  t0: number;
  cutoff: Date;
  /**
   * MaxRunDuration on the injected clock as well (the kernel's maxRunMs is real time): the seed's
   * tests move the clock past it.
   */
  deadline: number;
  /** "job started" went out at info: the run did work (an idle run stays at debug). */
  announced: boolean;
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
 *   3. the run's counts, close lag and batch lines are recorded per batch; the backlog gauge, the
 *      run duration and "job completed" at the end.
 */
export function createActivityCloser(deps: { db: Db; registry: Registry; settings: ActivityCloserSettings }): BatchWorker {
  const { db } = deps;
  const options = closerOptions(validateCloserSettings(deps.settings));
  const metrics = closerMetrics(deps.registry);
  const runs = new WeakMap<BatchRun, CloserRun>();

  function announce(run: BatchRun, state: CloserRun): void {
    if (state.announced) return;
    state.announced = true;
    run.log.info({ cutoff: state.cutoff.toISOString() }, 'job started');
  }

  function closingPhase<R>(steps: PhaseSteps<R>, state: CloserRun): BatchPhase<Closed> {
    const inOneTransaction = (run: BatchRun, claim: (tx: Db) => Promise<readonly R[]>) =>
      db.transaction(async (tx) => {
        const now = run.now();
        const rows = await claim(tx);
        return rows.length === 0 ? [] : steps.close(tx, rows, now, run.jobRunId);
      });
    // What the kernel had counted when the current batch started, for its "batch processed" line.
    let before = { claimed: 0, failed: 0 };
    return batchPhase<Closed>({
      name: steps.name,
      logFields: { type: steps.type },
      claim(limit, run, exclude) {
        before = { claimed: run.counts.claimed, failed: run.counts.failed };
        if (run.now().getTime() >= state.deadline) return Promise.resolve([]);
        return inOneTransaction(run, (tx) => steps.claimBatch(tx, state.cutoff, limit, exclude));
      },
      oneByOne: {
        async candidates(limit, run, exclude) {
          try {
            return await steps.candidateIds(db, state.cutoff, limit, exclude);
          } catch (err) {
            // The batch failed and its rows cannot even be read: the database is down or the
            // schema broke, and the run fails. Counted here, or errors_total would stay flat
            // through the outage the seed's "errors growing" alert is for.
            announce(run, state);
            metrics.errors.inc({ phase: steps.name });
            throw err;
          }
        },
        async claimOne(id, run) {
          try {
            return await inOneTransaction(run, async (tx) => {
              const row = await steps.claimOne(tx, id, state.cutoff);
              return row === undefined ? [] : [row];
            });
          } catch (err) {
            // The kernel logs it ("item failed") and leaves the row out of the rest of the run.
            announce(run, state);
            metrics.errors.inc({ phase: steps.name });
            throw err;
          }
        },
      },
      async record(outcomes, run) {
        const closed = outcomes.map((o) => o.row);
        const sessions = closed.flatMap((c) => c.sessions);
        const views = closed.flatMap((c) => c.views);
        recordClosed(metrics, run, sessions, views);
        spanAttributes({ closedCount: sessions.length + views.length }); // seed 001 "Traces", on the batch's span
        announce(run, state);
        run.log.info(
          {
            phase: steps.name,
            rows: run.counts.claimed - before.claimed,
            closed: sessions.length + views.length,
            closedSessions: sessions.length,
            closedViews: views.length,
            failed: run.counts.failed - before.failed,
          },
          'batch processed',
        );
      },
    });
  }

  return defineBatchWorker({
    name: ACTIVITY_CLOSER_JOB,
    every: options.pollingIntervalMs,
    settings: { batchSize: options.batchSize, maxRunMs: options.maxRunDurationMs },
    phases(run) {
      const startedAt = run.now();
      const state: CloserRun = {
        t0: performance.now(),
        cutoff: inactivityCutoff(startedAt, options.inactivityThresholdMs),
        deadline: startedAt.getTime() + options.maxRunDurationMs,
        announced: false,
      };
      runs.set(run, state);
      run.count('closedSessions', 0);
      run.count('closedViews', 0);
      run.log.debug({ cutoff: state.cutoff.toISOString() }, 'job started');
      return [closingPhase(HANGING_VIEWS, state), closingPhase(STALE_SESSIONS, state)];
    },
    async finish(run) {
      const state = runs.get(run)!;
      metrics.runDuration.observe(performance.now() - state.t0);
      // Active rows still idle past this run's cutoff: locked elsewhere, failed, or left by MaxRunDuration.
      const backlog = (await countIdleActiveSessions(db, state.cutoff)) + (await countIdleActiveViews(db, state.cutoff));
      run.count('backlogRemaining', backlog);
      metrics.backlog.set(backlog);
      const { closedSessions, closedViews, failed } = run.counts;
      const line = { ...run.counts, durationMs: Math.round(performance.now() - state.t0), cutoff: state.cutoff.toISOString(), aborted: run.signal.aborted };
      if (closedSessions! + closedViews! + failed === 0) run.log.debug(line, 'job completed');
      else run.log.info(line, 'job completed');
    },
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
