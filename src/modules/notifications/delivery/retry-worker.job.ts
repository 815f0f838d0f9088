import type { JobContext, JobDefinition } from '../../../platform/jobs/types.ts';
import { enqueue } from '../../../platform/outbox/enqueue.ts';
import { runClaimLoop, type ClaimLoopOptions } from './claim-loop.ts';
import type { BatchCounts, DeliveryDeps } from './record.ts';
import { dispatchedEvent } from '../events.ts';
import { NTF, RETRY_WORKER_JOB, RETRY_WORKER_LOCK, type ProviderErrorCode } from '../model.ts';
import { claimDueFailed, terminalizeExhausted } from './sql.ts';

export interface RetryWorkerOptions extends ClaimLoopOptions {
  /** Cycle length (seed: 1 min). */
  intervalMs: number;
}

export interface NotificationRetryWorker {
  /** One cycle: due Failed rows in bounded batches until none are left, the run is too long or stop is asked. */
  runOnce(ctx: Pick<JobContext, 'jobRunId' | 'signal' | 'now'>): Promise<BatchCounts>;
}

/**
 * NotificationRetryWorker (seed steps 3–7): claims due Failed notifications — not terminal,
 * NextAttemptAt ≤ now, Attempts < MaxAttempts, channel enabled with a working adapter — with row
 * locks, resends them, and records Sent / Failed+backoff / terminal Failed with its event.
 */
export function createRetryWorker(deps: DeliveryDeps, opts: RetryWorkerOptions): NotificationRetryWorker {
  return {
    async runOnce(ctx) {
      const exhausted = await closeExhausted(deps, ctx.now(), opts.batchSize);
      const counts = await runClaimLoop(deps, opts, claimDueFailed, 'retry', ctx);
      return { ...counts, terminal: counts.terminal + exhausted };
    },
  };
}

/** Rows left behind by a lowered MaxAttempts: terminal Failed with their event (A1), one batch per run. */
async function closeExhausted(deps: DeliveryDeps, now: Date, limit: number): Promise<number> {
  const rows = await deps.db.transaction(async (tx) => {
    const closed = await terminalizeExhausted(tx, now, limit);
    await enqueue(
      tx,
      closed.map((r) =>
        dispatchedEvent(
          { notificationId: r.id, channel: r.channel, deliveryCycle: r.deliveryCycle, status: 'Failed', errorCode: r.lastError, correlationId: r.correlationId },
          now,
        ),
      ),
    );
    return closed;
  });
  for (const r of rows) {
    const code = (r.lastError ?? NTF.transient) as ProviderErrorCode;
    deps.metrics.terminalFailures.inc({ channel: r.channel, reason: 'max_attempts', code });
    deps.metrics.dispatchedEvents.inc({ status: 'Failed' });
    deps.log.warn(
      { notificationId: r.id, channel: r.channel, code, attempts: r.attempts, deliveryCycle: r.deliveryCycle },
      'notification failed terminally (MaxAttempts lowered below its attempts); left for manual review (runbook terminal-failures)',
    );
  }
  return rows.length;
}

/**
 * The job: every minute on one replica at a time. The runner's advisory lock is keyed by the job
 * seed's lock name, `notifications:retry-worker`; a busy lock skips the run.
 */
export function retryWorkerJob(worker: NotificationRetryWorker, opts: Pick<RetryWorkerOptions, 'intervalMs'>): JobDefinition {
  return {
    name: RETRY_WORKER_JOB,
    lockKey: RETRY_WORKER_LOCK,
    every: opts.intervalMs,
    singleRunner: true,
    run: async (ctx) => ({ ...(await worker.runOnce(ctx)) }),
  };
}
