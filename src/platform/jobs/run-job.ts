import type { Db } from '../db/index.ts';
import type { Logger } from '../observability/logger.ts';
import { newId, type Clock } from '../time.ts';
import type { LockConnection } from './advisory-lock.ts';
import { acquireLease, type HeldLease } from './lease.ts';
import type { JobMetrics, RunOutcome } from './job-metrics.ts';
import { LAST_ERROR_MAX_LENGTH, recordJobRun } from './job-state.ts';
import { errorText } from '../errors/index.ts';
import type { Trigger } from './run-slot.ts';
import { noWakes, waitForWake, type RunWakes } from './run-wakes.ts';
import { ABANDONED, lockDeadline, lockTtlOf, type LockDeadline } from './lock-deadline.ts';
import { isIdleRun, lockKeyOf, normalizeCounts } from './schedule.ts';
import { traceRun } from './job-tracing.ts';
import type { JobCounts, JobDefinition } from './types.ts';

export type { RunOutcome };

export interface RunResult {
  jobRunId: string;
  outcome: RunOutcome;
  counts: JobCounts;
  durationMs: number;
  /** The error message of a failed run. */
  error?: string;
  /** Why a run was skipped: another replica holds the lock, a run is already going here, the runner stops, or an operator paused the job. */
  skipReason?: 'lock_busy' | 'already_running' | 'runner_stopped' | 'paused';
}

export interface RunDeps {
  /** For job_state writes. */
  db: Db;
  locks: LockConnection;
  log: Logger;
  metrics: JobMetrics;
  clock: Clock;
  /** This runner's name in the single-runner leases (lease.ts leaseHolderId). */
  holder: string;
}

interface RunStart {
  job: JobDefinition;
  jobRunId: string;
  log: Logger;
  startedAt: Date;
  t0: number;
  stop: AbortSignal;
}

export const skippedRun = (reason: NonNullable<RunResult['skipReason']>): RunResult => ({
  jobRunId: newId(),
  outcome: 'skipped',
  counts: {},
  durationMs: 0,
  skipReason: reason,
});

/**
 * One run of a job: take its lock when it is single-runner (busy → skipped, nothing recorded
 * beyond the metric), call run(ctx), release the lock, then record job_state, metrics and one log
 * line. A single-runner run is aborted at its deadline and abandoned at its LockTtl (lock-deadline.ts).
 * Never rejects: a failing job or database is an outcome, not a crash.
 */
export async function runJobOnce(
  deps: RunDeps,
  job: JobDefinition,
  stop: AbortSignal,
  trigger: Trigger,
  wakes: RunWakes = noWakes,
): Promise<RunResult> {
  const jobRunId = newId();
  const run: RunStart = {
    job,
    jobRunId,
    log: deps.log.child({ job: job.name, jobRunId }),
    startedAt: deps.clock.now(),
    t0: performance.now(),
    stop,
  };
  let lock: HeldLease | null = null;
  const lockTtlMs = lockTtlOf(job);
  if (job.singleRunner) {
    try {
      lock = await acquireLease(deps, job.name, lockKeyOf(job), lockTtlMs);
    } catch (err) {
      return conclude(deps, run, 'failure', {}, err, 'job lock could not be acquired');
    }
    if (!lock) {
      deps.metrics.recordRun(job.name, 'skipped', 0);
      run.log.debug({ trigger }, 'job run skipped: another runner holds its lock');
      return { jobRunId, outcome: 'skipped', counts: {}, durationMs: 0, skipReason: 'lock_busy' };
    }
  }
  const deadline = lock ? lockDeadline(lockTtlMs) : undefined;
  const signal = lock ? AbortSignal.any([stop, lock.lock.signal, lock.signal, deadline!.signal]) : stop;
  return traceRun(job.name, jobRunId, trigger, () => runLocked(deps, run, { lock, deadline, lockTtlMs, signal }, trigger, wakes));
}

/** What a run holds while it goes: its lock (if any), the lock's deadline, the run's signal. */
interface Held {
  lock: HeldLease | null;
  deadline: LockDeadline | undefined;
  lockTtlMs: number;
  signal: AbortSignal;
}

/** The run itself, its lock (if any) held: job.run, release, bookkeeping; in the run's span. */
async function runLocked(deps: RunDeps, run: RunStart, held: Held, trigger: Trigger, wakes: RunWakes): Promise<RunResult> {
  const { job, jobRunId } = run;
  const { lock, deadline, lockTtlMs, signal } = held;
  let outcome: RunOutcome = 'aborted';
  let counts: JobCounts = {};
  let error: unknown;
  let abandoned = false;
  try {
    if (!signal.aborted) {
      const running = job.run({
        jobRunId,
        signal,
        log: run.log,
        ...(lock ? { fence: lock.fence } : {}),
        now: () => deps.clock.now(),
        woken: () => wakes.take(),
        observeBatch: (phase, rows, durationMs) => deps.metrics.recordBatch(job.name, phase, rows, durationMs),
        // A run started by hand (ops, tests) does its work and returns; it does not stay for more.
        ...(trigger === 'manual' ? {} : { waitForWake: (timeoutMs: number) => waitForWake(wakes, signal, timeoutMs) }),
      });
      const result = deadline ? await deadline.race(running) : await running;
      if (result === ABANDONED) {
        abandoned = true;
        watchAbandoned(running, run);
      } else {
        counts = normalizeCounts(result);
        outcome = signal.aborted ? 'aborted' : 'success';
      }
    }
  } catch (err) {
    // A job that stops on abort may do so by throwing; that is an abort, not a failure.
    outcome = signal.aborted ? 'aborted' : 'failure';
    error = err;
  } finally {
    deadline?.clear();
    // Released before the bookkeeping, so another replica is not kept waiting on it. An abandoned
    // run's lock goes too: the kernel, not the hung run, decides when the lock is free.
    await lock?.release();
  }
  if (abandoned) {
    deps.metrics.recordAbandoned(job.name);
    const err = new Error(`job run abandoned past its lock deadline (${lockTtlMs} ms)`);
    // A wake that came meanwhile does not start a run here straight away: what hung this run likely
    // hangs the next one, while other replicas (woken by the same NOTIFY) and the next tick find the rows.
    wakes.take();
    return conclude(deps, run, 'failure', counts, err, 'job run abandoned past its lock deadline', { lockTtlMs });
  }
  if (outcome === 'aborted') error = signal.reason;
  return conclude(deps, run, outcome, counts, error);
}

/** The hung run may still settle: it must not reject unhandled, and on-call learns when it let go. */
function watchAbandoned(running: Promise<unknown>, run: RunStart): void {
  running.then(
    () => run.log.warn({ durationMs: Math.round(performance.now() - run.t0) }, 'abandoned job run returned'),
    (err: unknown) => run.log.warn({ err, durationMs: Math.round(performance.now() - run.t0) }, 'abandoned job run threw'),
  );
}

async function conclude(
  deps: RunDeps,
  run: RunStart,
  outcome: Exclude<RunOutcome, 'skipped'>,
  counts: JobCounts,
  error: unknown,
  failureMessage = 'job run failed',
  fields: Record<string, unknown> = {},
): Promise<RunResult> {
  const name = run.job.name;
  const durationMs = Math.round(performance.now() - run.t0);
  const message = outcome === 'success' || error === undefined ? undefined : errorText(error, { root: false, name: false, max: LAST_ERROR_MAX_LENGTH });
  deps.metrics.recordRun(name, outcome, durationMs);
  if (outcome === 'success') deps.metrics.recordSuccessAt(name, run.startedAt);
  try {
    await recordJobRun(deps.db, { name, outcome, startedAt: run.startedAt, durationMs, counts, error: message });
  } catch (err) {
    run.log.warn({ err }, 'job state could not be recorded');
  }
  if (outcome === 'success') {
    // One line per run: a job that logs its own `job completed` (every batch worker) gets no second one.
    if (!run.job.logsCompletion) {
      if (isIdleRun(counts)) run.log.debug({ ...counts, durationMs }, 'job completed');
      else run.log.info({ ...counts, durationMs }, 'job completed');
    }
  } else if (outcome === 'failure') {
    run.log.error({ err: error, counts, durationMs, ...fields }, failureMessage);
  } else if (run.stop.aborted) {
    run.log.info({ reason: message, counts, durationMs }, 'job run aborted');
  } else {
    // Lost its lock: another replica may be running it now.
    run.log.warn({ reason: message, counts, durationMs }, 'job run aborted');
  }
  return { jobRunId: run.jobRunId, outcome, counts, durationMs, ...(message === undefined ? {} : { error: message }) };
}
