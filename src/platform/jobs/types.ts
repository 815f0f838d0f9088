import type { Logger } from '../observability/logger.ts';

/** What a job run gets: its id (on every log line), a stop signal to check between rows, the time. */
export interface JobContext {
  jobRunId: string;
  signal: AbortSignal;
  log: Logger;
  now(): Date;
}

/** Counts a run reports (rows claimed, sent, …); shown by the ops endpoints and logged. */
export type JobCounts = Record<string, number>;

export interface JobDefinition {
  /** Stable name: metric label, lock key `job:scheduled:<name>`, ops URL segment. */
  name: string;
  /** Interval in milliseconds (croner `interval`), or a cron pattern in UTC. Exactly one. */
  every?: number;
  cron?: string;
  /** Run on one replica at a time (PostgreSQL advisory lock; lock busy → the run is skipped). */
  singleRunner?: boolean;
  /** PostgreSQL NOTIFY channel whose notifications start a run at once. */
  wakeChannel?: string;
  run(ctx: JobContext): Promise<JobCounts | void>;
}

export const defineJob = (job: JobDefinition): JobDefinition => job;
