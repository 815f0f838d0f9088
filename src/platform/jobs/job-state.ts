import { sql } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import type { Logger } from '../observability/logger.ts';
import type { JobMetrics } from './job-metrics.ts';
import type { JobCounts } from './types.ts';
import { JOBS_DEFAULTS } from './defaults.ts';

/** Outcomes that reach job_state; a skipped run (another replica held the lock) writes nothing. */
export type RecordedOutcome = 'success' | 'failure' | 'aborted';

export interface JobRunRecord {
  name: string;
  outcome: RecordedOutcome;
  startedAt: Date;
  durationMs: number;
  counts: JobCounts;
  error?: string;
}

export interface JobStateRow {
  name: string;
  lastRunAt: Date | null;
  lastSuccessAt: Date | null;
  lastOutcome: string | null;
  lastDurationMs: number | null;
  lastCounts: JobCounts | null;
  lastError: string | null;
  runsTotal: number;
  failuresTotal: number;
  /** The last runs that did work or failed, newest first. */
  recentRuns: RecentRun[];
  pausedAt: Date | null;
  pausedBy: string | null;
  pauseReason: string | null;
  pauseUntil: Date | null;
}

/** An operator's pause: who, why, and when they expect to resume (null: until resumed). */
export interface JobPause {
  by: string;
  reason: string | null;
  until: Date | null;
}

/** One entry of job_state.recent_runs. */
export interface RecentRun {
  at: string;
  outcome: RecordedOutcome;
  durationMs: number;
  counts: JobCounts;
  error?: string;
}

/** How many runs job_state.recent_runs keeps (JOBS_DEFAULTS.recentRunsKept). */
export const RECENT_RUNS_KEPT = JOBS_DEFAULTS.recentRunsKept;

/** last_error is varchar(512). */
export const LAST_ERROR_MAX_LENGTH = 512;

/** One row per job across all replicas: the last run wins, totals add up. */
export async function recordJobRun(db: Db, run: JobRunRecord): Promise<void> {
  const error = run.error === undefined ? null : run.error.slice(0, LAST_ERROR_MAX_LENGTH);
  const idle = run.outcome === 'success' && Object.values(run.counts).every((n) => n === 0);
  const recent: RecentRun = {
    at: run.startedAt.toISOString(),
    outcome: run.outcome,
    durationMs: Math.round(run.durationMs),
    counts: run.counts,
    ...(error === null ? {} : { error }),
  };
  const recentJson = idle ? null : JSON.stringify([recent]);
  await query(
    db,
    sql`insert into platform.job_state as s
          (name, last_run_at, last_success_at, last_outcome, last_duration_ms, last_counts, last_error,
           runs_total, failures_total, recent_runs)
        values (${run.name}, ${run.startedAt}, case when ${run.outcome} = 'success' then ${run.startedAt}::timestamptz end,
                ${run.outcome}, ${Math.round(run.durationMs)}, ${JSON.stringify(run.counts)}::jsonb, ${error},
                1, case when ${run.outcome} = 'failure' then 1 else 0 end, coalesce(${recentJson}::jsonb, '[]'::jsonb))
        on conflict (name) do update set
          last_run_at = excluded.last_run_at,
          last_success_at = coalesce(excluded.last_success_at, s.last_success_at),
          last_outcome = excluded.last_outcome,
          last_duration_ms = excluded.last_duration_ms,
          last_counts = excluded.last_counts,
          last_error = excluded.last_error,
          runs_total = s.runs_total + 1,
          failures_total = s.failures_total + excluded.failures_total,
          recent_runs = case when ${recentJson}::jsonb is null then s.recent_runs
                             else jsonb_path_query_array(${recentJson}::jsonb || s.recent_runs, ${`$[0 to ${RECENT_RUNS_KEPT - 1}]`}::jsonpath) end`,
  );
}

export async function readJobStates(db: Db, names: string[]): Promise<Map<string, JobStateRow>> {
  const { rows } = await query<JobStateRow>(
    db,
    sql`select name, last_run_at as "lastRunAt", last_success_at as "lastSuccessAt", last_outcome as "lastOutcome",
               last_duration_ms as "lastDurationMs", last_counts as "lastCounts", last_error as "lastError",
               runs_total as "runsTotal", failures_total as "failuresTotal", recent_runs as "recentRuns",
               paused_at as "pausedAt", paused_by as "pausedBy", pause_reason as "pauseReason", pause_until as "pauseUntil"
          from platform.job_state
         where name = any(${sql.param(names)}::text[])`,
  );
  return new Map(rows.map((row) => [row.name, row]));
}

/** After a restart the last-success gauge would read 0 until the next success; job_state knows better. */
export async function seedLastSuccess(db: Db, names: string[], metrics: Pick<JobMetrics, 'recordSuccessAt'>, log: Logger): Promise<void> {
  try {
    const states = await readJobStates(db, names);
    for (const s of states.values()) if (s.lastSuccessAt) metrics.recordSuccessAt(s.name, s.lastSuccessAt);
  } catch (err) {
    log.warn({ err }, 'job state could not be read at start');
  }
}

/** Pauses (with who, why and until when) or resumes (null) a job for every replica; the row is created if the job never ran. */
export async function setJobPaused(db: Db, name: string, pause: JobPause | null, now: Date): Promise<void> {
  await query(
    db,
    sql`insert into platform.job_state as s (name, paused_at, paused_by, pause_reason, pause_until)
        values (${name}, ${pause ? now : null}::timestamptz, ${pause?.by ?? null}, ${pause?.reason ?? null}, ${pause?.until ?? null}::timestamptz)
        on conflict (name) do update set paused_at = excluded.paused_at, paused_by = excluded.paused_by,
          pause_reason = excluded.pause_reason, pause_until = excluded.pause_until`,
  );
}

/** The jobs paused now, each with its expected end (null: until resumed); every replica reads this every second or so. */
export async function readPausedJobs(db: Db): Promise<Map<string, Date | null>> {
  const { rows } = await query<{ name: string; until: Date | null }>(db, sql`select name, pause_until as until from platform.job_state where paused_at is not null`);
  return new Map(rows.map((r) => [r.name, r.until]));
}
