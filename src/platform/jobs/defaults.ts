import { SECOND_MS } from '../time.ts';
import { defineDefaults } from '../types/index.ts';

/**
 * Every default of the job runner and the batch worker, in one place. A job declares its own
 * defaults in its own part (its PollingInterval, BatchSize, MaxRunDuration: docs/writing-a-job.md);
 * these are the kernel's, used when a job names none. Limits of a column or of setTimeout
 * (JOB_NAME_MAX_LENGTH, EVERY_MAX_MS) are bounds, not defaults, and stay with their code.
 */
export const JOBS_DEFAULTS = defineDefaults({
  /**
   * The LockTtl of a single-runner job that names none (seed 000: "TTL LockTtl default 30 с"); a job
   * with a long maxRunMs gets twice that plus the margin instead (what started just before maxRunMs
   * may take about as long again).
   */
  lockTtlMs: 30 * SECOND_MS,
  /** What an aborted run gets to return in (its in-flight row, the batch's record) before it is abandoned. */
  lockTtlMarginMs: 2 * SECOND_MS,
  /** An unlock that has not answered by then is treated as failed (the session is dropped): the lock deadline must not wait on a stuck lock connection. */
  lockReleaseTimeoutMs: 5 * SECOND_MS,
  /** How long a takeover waits for the stale holder's session to exit before trying the lock again. */
  takeoverTerminateWaitMs: 5 * SECOND_MS,
  /** After pg-listen gives up reconnecting, a fresh wake subscriber is tried this much later. */
  wakeRestartDelayMs: 5 * SECOND_MS,
  /** How many runs job_state.recent_runs keeps (idle successful runs are not kept: they would push out every run that did work). */
  recentRunsKept: 10,
  /** Rows failing one by one get a line each; a batch where this many or more failed (a downstream outage) gets one. */
  failureLinesPerBatch: 3,
  /** Rows processed at the same time within a batch when a job names none: one, in claim order. */
  batchConcurrency: 1,
  /**
   * Server-side TCP keepalive of the lock session. PostgreSQL notices a replica that vanished without
   * closing its socket (power loss, network cut) only through keepalive, 2 h by default, and until then
   * its locks block every other replica. With these values the server probes after 10 s idle and
   * gives up after 3 unanswered probes 5 s apart: the lock is free about 25 s after the node died.
   * tcp_user_timeout bounds the same wait when the server has a reply in flight instead of idling.
   */
  lockKeepalive: { idleSeconds: 10, intervalSeconds: 5, count: 3, userTimeoutMs: 25 * SECOND_MS },
  /** How long the runner's stop() waits for aborted runs to return before closing connections anyway. */
  runnerStopTimeoutMs: 5 * SECOND_MS,
  /** How often a started runner reads which jobs are paused (job_state.paused_at). */
  runnerPauseRefreshMs: 1 * SECOND_MS,
});
