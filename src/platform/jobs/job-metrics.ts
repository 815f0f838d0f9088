import { counter, gauge, histogram, type Registry } from '../observability/metrics.ts';
import type { BatchRows } from './types.ts';

export const RUN_OUTCOMES = ['success', 'failure', 'skipped', 'aborted'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

export interface JobMetrics {
  /** Makes every outcome series exist at 0, so rate() and absence alerts work from the first scrape. */
  declare(job: string): void;
  recordRun(job: string, outcome: RunOutcome, durationMs: number): void;
  recordSuccessAt(job: string, at: Date): void;
  /** A single-runner run still going at its LockTtl, whose lock was released from under it. */
  recordAbandoned(job: string): void;
  /** A single-runner lock taken over from a holder whose lease expired (lease.ts). */
  recordTakeover(job: string): void;
  /**
   * The operators' pauses as this runner last read them (job name → expected end, null: none): the
   * alert rules of a job that is not running hold back while its pause is planned (deploy/prometheus).
   */
  recordPauses(paused: ReadonlyMap<string, Date | null>): void;
  /** One batch of a batch worker's phase. */
  recordBatch(job: string, phase: string, rows: BatchRows, durationMs: number): void;
}

export function createJobMetrics(registry: Registry): JobMetrics {
  const runs = counter(registry, {
    name: 'job_runs_total',
    help: 'Job runs by outcome; skipped = another replica held the single-runner lock',
    labelNames: ['job', 'outcome'],
  });
  const duration = histogram(registry, {
    name: 'job_run_duration_seconds',
    help: 'Duration of job runs that were not skipped',
    labelNames: ['job'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  });
  const abandoned = counter(registry, {
    name: 'job_runs_abandoned_total',
    help: 'Single-runner runs still going at their LockTtl: the lock was released and the next schedule runs without them',
    labelNames: ['job'],
  });
  const takeovers = counter(registry, {
    name: 'job_lock_takeovers_total',
    help: 'Single-runner locks taken over from a holder that stopped renewing its lease (its lock session was ended)',
    labelNames: ['job'],
  });
  const lastSuccess = gauge(registry, {
    name: 'job_last_success_timestamp_seconds',
    help: 'Unix time of the last successful run of the job (seeded from job_state at start)',
    labelNames: ['job'],
  });
  const batches = counter(registry, {
    name: 'job_batches_total',
    help: 'Batches a batch worker claimed that held at least one row, by phase',
    labelNames: ['job', 'phase'],
  });
  const batchRows = counter(registry, {
    name: 'job_batch_rows_total',
    help: 'Rows of batch workers by what became of them: claimed, failed (processing or recording), released (run stopped)',
    labelNames: ['job', 'phase', 'outcome'],
  });
  const batchDuration = histogram(registry, {
    name: 'job_batch_duration_seconds',
    help: 'Claim to recorded outcome of one batch',
    labelNames: ['job', 'phase'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  });
  const pausedGauge = gauge(registry, {
    name: 'job_paused',
    help: 'Whether an operator paused the job (1) or not (0), as this replica read it (job_state, every second): a planned pause, not an outage',
    labelNames: ['job'],
  });
  const pauseEnd = gauge(registry, {
    name: 'job_pause_expected_end_timestamp_seconds',
    help: "Unix time the operator who paused the job expects to resume it; absent while not paused or paused without an expected end",
    labelNames: ['job'],
  });
  const declared = new Set<string>();
  const lastSuccessSeconds = new Map<string, number>();
  return {
    declare(job) {
      for (const outcome of RUN_OUTCOMES) runs.inc({ job, outcome }, 0);
      abandoned.inc({ job }, 0);
      takeovers.inc({ job }, 0);
      pausedGauge.set({ job }, 0);
      declared.add(job);
    },
    recordPauses(paused) {
      for (const job of declared) {
        const until = paused.get(job);
        pausedGauge.set({ job }, paused.has(job) ? 1 : 0);
        if (until) pauseEnd.set({ job }, until.getTime() / 1000);
        else pauseEnd.remove({ job });
      }
    },
    recordTakeover(job) {
      takeovers.inc({ job });
    },
    recordAbandoned(job) {
      abandoned.inc({ job });
    },
    recordRun(job, outcome, durationMs) {
      runs.inc({ job, outcome });
      if (outcome !== 'skipped') duration.observe({ job }, durationMs / 1000);
    },
    recordBatch(job, phase, rows, durationMs) {
      batches.inc({ job, phase });
      batchRows.inc({ job, phase, outcome: 'claimed' }, rows.claimed);
      if (rows.failed > 0) batchRows.inc({ job, phase, outcome: 'failed' }, rows.failed);
      if (rows.released > 0) batchRows.inc({ job, phase, outcome: 'released' }, rows.released);
      batchDuration.observe({ job, phase }, durationMs / 1000);
    },
    recordSuccessAt(job, at) {
      // Never moves back: seeding from job_state may finish after a newer local success.
      const seconds = at.getTime() / 1000;
      if ((lastSuccessSeconds.get(job) ?? -Infinity) >= seconds) return;
      lastSuccessSeconds.set(job, seconds);
      lastSuccess.set({ job }, seconds);
    },
  };
}
