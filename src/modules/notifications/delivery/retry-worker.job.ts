import { batchPhase, defineBatchWorker, type BatchRun, type BatchWorker } from '../../../platform/jobs/index.ts';
import { enqueue } from '../../../platform/outbox/index.ts';
import { dispatchedEvent } from '../events.ts';
import { NTF, RETRY_WORKER_JOB, RETRY_WORKER_LOCK, type ProviderErrorCode } from '../model.ts';
import type { DeliveryJobOptions } from '../settings.ts';
import { batchSettingsOf, deliveryPhase, startDeliveryCounts } from './delivery-phase.ts';
import type { DeliveryDeps } from './outcomes.ts';
import { claimDueFailed, countHeldBackDue, exhaustedIds, terminalizeExhausted, type ExhaustedRow } from './sql.ts';
import { heldBackReason } from '../notifications.ts';
import { recordStatusChanges } from '../status-frames.ts';

/**
 * NotificationRetryWorker (seed steps 3–7), every minute on one replica at a time: the runner's
 * advisory lock is keyed by the seed's lock name `notifications:retry-worker`, and a busy lock
 * skips the run.
 * Two phases:
 *   close-exhausted — Failed rows whose Attempts already reach a lowered MaxAttempts become terminal
 *     with their NotificationDispatchedEvent(Failed), without another send (A1); the claim does it;
 *   retry — step 3: claims due Failed notifications (not terminal, NextAttemptAt ≤ now, Attempts <
 *     MaxAttempts, channel enabled with a working adapter) with row locks and a lease; step 4:
 *     resends each through its channel's adapter; steps 5–7: records Sent / Failed with the next
 *     backoff / terminal Failed, each cycle-ending outcome with its event in the same transaction,
 *     and counts retry_sent_total.
 */
export function retryWorkerJob(deps: DeliveryDeps, opts: DeliveryJobOptions): BatchWorker {
  return defineBatchWorker({
    name: RETRY_WORKER_JOB,
    lockKey: RETRY_WORKER_LOCK,
    every: opts.everyMs,
    singleRunner: true,
    settings: batchSettingsOf(opts),
    phases: (run) => {
      startDeliveryCounts(run);
      return [
        batchPhase<ExhaustedRow>({
          name: 'close-exhausted',
          claim: (limit, r) => closeExhausted(deps, r, limit),
          oneByOne: {
            candidates: (limit, r) => exhaustedIds(deps.db, r.now(), limit),
            claimOne: (id, r) => closeExhausted(deps, r, 1, id),
          },
        }),
        deliveryPhase(deps, { ...opts, name: 'retry', source: 'retry', claim: claimDueFailed }),
      ];
    },
    finish: (run) => countSkippedDue(deps, run),
  });
}

/**
 * A3: due rows of a channel that cannot send are left out of the claim, so no attempt is made;
 * the worker counts them as skipped (`notifications_skipped_total`) once per run that passed them
 * over. A read that fails is only logged: it must not hide the run's own error.
 */
async function countSkippedDue(deps: DeliveryDeps, run: BatchRun): Promise<void> {
  if (run.signal.aborted) return;
  try {
    for (const held of await countHeldBackDue(deps.db, run.now(), deps.providers.availableKeys())) {
      const reason = heldBackReason(held.isEnabled, deps.providers.state(held.providerKey)) ?? 'provider_not_implemented';
      run.count('skipped', held.rows);
      deps.metrics.skipped.inc({ channel: held.channel, reason }, held.rows);
    }
  } catch (err) {
    run.log.warn({ err }, 'due notifications of channels that cannot send were not counted this run');
  }
}

/** One bounded batch of exhausted rows made terminal, their events in the same transaction (A1). */
async function closeExhausted(deps: DeliveryDeps, run: BatchRun, limit: number, id?: string): Promise<ExhaustedRow[]> {
  const now = run.now();
  const rows = await deps.db.transaction(async (tx) => {
    const closed = await terminalizeExhausted(tx, now, limit, id);
    await enqueue(
      tx,
      closed.map((r) =>
        dispatchedEvent(
          { notificationId: r.id, channel: r.channel, deliveryCycle: r.deliveryCycle, status: 'Failed', errorCode: r.lastError, correlationId: r.correlationId },
          now,
        ),
      ),
    );
    await recordStatusChanges(
      deps.userFrames,
      tx,
      closed.map((r) => ({ notificationId: r.id, recipientUserId: r.recipientUserId, channel: r.channel, status: 'Failed' as const, terminal: true, deliveryCycle: r.deliveryCycle, errorCode: r.lastError, readAt: r.readAt, version: r.version })),
      now,
    );
    return closed;
  });
  run.count('terminal', rows.length);
  for (const r of rows) {
    const code = (r.lastError ?? NTF.transient) as ProviderErrorCode;
    deps.metrics.terminalFailures.inc({ channel: r.channel, reason: 'max_attempts', code });
    deps.metrics.dispatchedEvents.inc({ status: 'Failed' });
    run.log.warn(
      { notificationId: r.id, channel: r.channel, code, attempts: r.attempts, deliveryCycle: r.deliveryCycle },
      'notification failed terminally (MaxAttempts lowered below its attempts); left for manual review (runbook terminal-failures)',
    );
  }
  return rows;
}
