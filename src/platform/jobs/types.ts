import type { Logger } from '../observability/logger.ts';
import type { Fence } from './lease-sql.ts';

/** What a job run gets: its id (on every log line), a stop signal to check between rows, the time. */
export interface JobContext {
  jobRunId: string;
  signal: AbortSignal;
  log: Logger;
  /** Wall-clock time, for the job's own rules (a cutoff): tests inject it. */
  now(): Date;
  /**
   * Monotonic milliseconds, for the kernel's deadlines (maxRunMs) and durations: tests inject it
   * to move a run past its deadline. Default performance.now().
   */
  monotonicMs?(): number;
  /**
   * A single-runner run's lease token: a write a late run must not make once another replica took
   * the lock over puts leaseHolds(fence) in its own statement. Absent outside the runner.
   */
  fence?: Fence;
  /**
   * True, once per wake, when a wake for this job (NOTIFY on its channel, or connectWake) arrived
   * since the run started or since the last call. A run that finds it true may carry on (claim
   * again) instead of ending and being started again at once: the wake is taken, so no rerun
   * follows for it. Absent where a job is run outside the runner.
   */
  woken?(): boolean;
  /**
   * Waits up to `timeoutMs` for the next wake and takes it (true), or gives up (false: time is up
   * or the run is stopped). Lets a run stay for the next commit instead of ending at an empty
   * batch; the run keeps its lock meanwhile. Absent where a job is run outside the runner.
   */
  waitForWake?(timeoutMs: number): Promise<boolean>;
  /**
   * Records one batch of a batch worker in the job's metrics (job_batches_total,
   * job_batch_rows_total, job_batch_duration_seconds). Absent where a job is run outside the runner.
   */
  observeBatch?(phase: string, rows: BatchRows, durationMs: number): void;
}

/** Rows of one batch by what became of them. */
export interface BatchRows {
  claimed: number;
  failed: number;
  released: number;
}

/** Counts a run reports (rows claimed, sent, …); shown by the ops endpoints and logged. */
export type JobCounts = Record<string, number>;

export interface JobDefinition {
  /**
   * Stable name, lower-case words joined by `-` (`messenger-realtime-dispatch`): metric label, log
   * field, ops URL segment and, unless `lockKey` says otherwise, lock key `job:scheduled:<name>`.
   */
  name: string;
  /** The single-runner lock's key where a seed spells it out (`notifications:retry-worker`). */
  lockKey?: string;
  /** Interval in milliseconds (croner `interval`), or a cron pattern in UTC. Exactly one. */
  every?: number;
  cron?: string;
  /** Run on one replica at a time (PostgreSQL advisory lock; lock busy → the run is skipped). */
  singleRunner?: boolean;
  /** The run's own deadline: it stops by then (a batch worker's settings.maxRunMs). */
  maxRunMs?: number;
  /**
   * Single-runner: the longest one run holds the lock (seed 000's LockTtl), at least maxRunMs +
   * LOCK_TTL_MARGIN_MS. The runner aborts the run's signal that margin before it and abandons a run
   * still going at it (lock-deadline.ts). Default: 30 s, or 2 × maxRunMs + the margin when longer.
   */
  lockTtlMs?: number;
  /** PostgreSQL NOTIFY channel whose notifications start a run at once. */
  wakeChannel?: string;
  /**
   * Called once when the job is registered, with a function that wakes the job in this process as
   * a notification on its channel would. For an owner that has just committed rows the job picks
   * up: the replica that committed them need not wait for the notification's round trip through
   * PostgreSQL (which still wakes every other replica). `notifyPayload` is this runner's own
   * payload: an owner that calls `wake` after each commit sends it with that commit's NOTIFY, and
   * this replica's listener then skips the notification for this job (it was woken already; a second wake
   * would only cost an empty claim), while every other replica wakes on it as before.
   */
  connectWake?(wake: () => void, notifyPayload: string): void;
  /**
   * The job logs its run's `job completed` line itself (a batch worker does, with its counts and the
   * seed's fields), so the runner adds no second line for a successful run; it still logs failures.
   */
  logsCompletion?: boolean;
  run(ctx: JobContext): Promise<JobCounts | void>;
}

export const defineJob = (job: JobDefinition): JobDefinition => job;
