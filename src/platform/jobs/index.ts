/** The job runner's public surface: define jobs, run them on a timer, on NOTIFY, or on request. */
export { defineJob, type BatchRows, type JobContext, type JobCounts, type JobDefinition } from './types.ts';
export { BATCH_TIMING_CHANNEL, defineBatchWorker, type BatchTiming } from './batch-worker.ts';
export { defineSweep, type SweepDefinition, type SweepStep } from './sweep.ts';
export {
  batchPhase,
  type BatchCounts,
  type BatchPhase,
  type BatchRun,
  type BatchRunContext,
  type BatchSettings,
  type BatchWorker,
  type BatchWorkerDefinition,
  type Outcome,
} from './batch-types.ts';
export {
  createJobRunner,
  InvalidJobError,
  UnknownJobError,
  type JobInfo,
  type JobRunner,
  type JobRunnerOptions,
} from './runner.ts';
export type { RunOutcome, RunResult } from './run-job.ts';
export type { JobPause } from './job-state.ts';
export { LOCK_APPLICATION_NAME, LockConnectionLostError } from './advisory-lock.ts';
export { DEFAULT_LOCK_TTL_MS, LOCK_TTL_MARGIN_MS, lockTtlOf, RunDeadlineError } from './lock-deadline.ts';
export { JOBS_DEFAULTS } from './defaults.ts';
export { WAKE_APPLICATION_NAME } from './wake.ts';
export { leaseHolds, LeaseLostError, type Fence } from './lease-sql.ts';
export { describeSchedule, JOB_NAME_PATTERN, lockKeyOf } from './schedule.ts';
