/** The job runner's public surface: define jobs, run them on a timer, on NOTIFY, or on request. */
export { defineJob, type JobContext, type JobCounts, type JobDefinition } from './types.ts';
export {
  createJobRunner,
  InvalidJobError,
  UnknownJobError,
  type JobInfo,
  type JobRunner,
  type JobRunnerOptions,
} from './runner.ts';
export type { RunOutcome, RunResult } from './run-job.ts';
export { LOCK_APPLICATION_NAME, LockConnectionLostError } from './advisory-lock.ts';
export { WAKE_APPLICATION_NAME } from './wake.ts';
export { describeSchedule, lockKeyOf } from './schedule.ts';
