import type { JobDefinition } from './types.ts';
import { JOBS_DEFAULTS } from './defaults.ts';

/**
 * The LockTtl of single-runner jobs (seed 000: "TTL LockTtl default 30 с"): no run holds its lock
 * longer. The job stops itself by its maxRunMs; the runner aborts the run's signal LOCK_TTL_MARGIN_MS
 * before the LockTtl at the latest, and a run still going at the LockTtl is abandoned — its lock is
 * released so this or another replica runs the next schedule, whatever the hung run waits on.
 */

/** The kernel's LockTtl for a job that names none, and the margin (JOBS_DEFAULTS, defaults.ts). */
export const DEFAULT_LOCK_TTL_MS = JOBS_DEFAULTS.lockTtlMs;
export const LOCK_TTL_MARGIN_MS = JOBS_DEFAULTS.lockTtlMarginMs;

export type LockTtlFields = Pick<JobDefinition, 'singleRunner' | 'maxRunMs' | 'lockTtlMs'>;

export const lockTtlOf = (job: LockTtlFields): number =>
  job.lockTtlMs ?? Math.max(DEFAULT_LOCK_TTL_MS, 2 * (job.maxRunMs ?? 0) + LOCK_TTL_MARGIN_MS);

export class RunDeadlineError extends Error {
  constructor(lockTtlMs: number) {
    super(`job run aborted at its deadline, ${LOCK_TTL_MARGIN_MS} ms before its lock TTL (${lockTtlMs} ms)`);
    this.name = 'RunDeadlineError';
  }
}

export const ABANDONED = Symbol('abandoned');

export interface LockDeadline {
  /** Aborts LOCK_TTL_MARGIN_MS before the LockTtl. */
  signal: AbortSignal;
  /** The run's result, or ABANDONED when it has not settled by the LockTtl (it may still settle later). */
  race<T>(run: Promise<T>): Promise<T | typeof ABANDONED>;
  clear(): void;
}

/** Timers from now, on the monotonic clock (setTimeout), whatever the injected business clock says. */
export function lockDeadline(lockTtlMs: number): LockDeadline {
  const abort = new AbortController();
  const abortAfter = lockTtlMs - LOCK_TTL_MARGIN_MS;
  const abortTimer = setTimeout(() => abort.abort(new RunDeadlineError(lockTtlMs)), abortAfter);
  let ttlTimer: NodeJS.Timeout | undefined;
  const ttl = new Promise<typeof ABANDONED>((resolve) => (ttlTimer = setTimeout(resolve, lockTtlMs, ABANDONED)));
  const clear = () => {
    clearTimeout(abortTimer);
    clearTimeout(ttlTimer);
  };
  return { signal: abort.signal, race: (run) => Promise.race([run, ttl]), clear };
}
