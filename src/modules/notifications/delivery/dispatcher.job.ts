import type { JobContext, JobDefinition } from '../../../platform/jobs/types.ts';
import { runClaimLoop, type ClaimLoopOptions } from './claim-loop.ts';
import type { BatchCounts, DeliveryDeps } from './record.ts';
import { DISPATCHER_JOB, DISPATCH_WAKE_CHANNEL } from '../model.ts';
import { claimPending } from './sql.ts';

export interface DispatcherOptions extends ClaimLoopOptions {
  /** Timer for rows whose wake-up was missed; the NOTIFY at commit starts a run at once. */
  intervalMs: number;
}

export interface NotificationDispatcher {
  runOnce(ctx: Pick<JobContext, 'jobRunId' | 'signal' | 'now'>): Promise<BatchCounts>;
}

/** NotificationDispatcher (seed step 1): the first send of Pending notifications, right after their commit. */
export function createDispatcher(deps: DeliveryDeps, opts: DispatcherOptions): NotificationDispatcher {
  return { runOnce: (ctx) => runClaimLoop(deps, opts, claimPending, 'dispatcher', ctx) };
}

/**
 * Woken by `pg_notify('notifications_dispatch')` from the creating transaction, so a notification is
 * sent promptly after commit. Not single-runner: claims skip locked rows and leases keep replicas apart.
 */
export function dispatcherJob(dispatcher: NotificationDispatcher, opts: Pick<DispatcherOptions, 'intervalMs'>): JobDefinition {
  return {
    name: DISPATCHER_JOB,
    every: opts.intervalMs,
    wakeChannel: DISPATCH_WAKE_CHANNEL,
    run: async (ctx) => ({ ...(await dispatcher.runOnce(ctx)) }),
  };
}
