import { defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import { DISPATCHER_JOB, DISPATCH_WAKE_CHANNEL } from '../model.ts';
import type { DeliveryJobOptions } from '../settings.ts';
import { batchSettingsOf, deliveryPhase, startDeliveryCounts } from './delivery-phase.ts';
import type { DeliveryDeps } from './outcomes.ts';
import { claimPending } from './sql.ts';

/**
 * NotificationDispatcher (seed step 1): the first send of Pending notifications, right after their
 * commit — woken by `pg_notify('notifications_dispatch')` from the creating transaction, with the
 * timer for wakes that were missed. Not single-runner: claims skip locked rows and leases keep
 * replicas apart. A provider's retriable error leaves the row Failed with Attempts = 1 and
 * NextAttemptAt = now + backoff(1) (seed step 2), for the retry worker.
 */
export function dispatcherJob(deps: DeliveryDeps, opts: DeliveryJobOptions): BatchWorker {
  return defineBatchWorker({
    name: DISPATCHER_JOB,
    every: opts.everyMs,
    wakeChannel: DISPATCH_WAKE_CHANNEL,
    settings: batchSettingsOf(opts),
    phases: (run) => {
      startDeliveryCounts(run);
      return [deliveryPhase(deps, { ...opts, name: 'pending', source: 'dispatcher', claim: claimPending })];
    },
  });
}
