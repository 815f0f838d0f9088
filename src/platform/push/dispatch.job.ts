import type { Backoff } from '../backoff/index.ts';
import { batchPhase, defineBatchWorker, type BatchSettings, type BatchWorker } from '../jobs/index.ts';
import { createDispatchSteps, DISPATCH_COUNTS, type DispatchResult, type DispatchRow, type DispatchStepsDeps } from './dispatcher.ts';
import { REALTIME_OUTBOX_CHANNEL } from './outbox-sql.ts';

/** Lock key `job:scheduled:messenger-realtime-dispatch` (the platform prefixes `job:scheduled:`). */
export const REALTIME_DISPATCH_JOB = 'messenger-realtime-dispatch';

/** RealtimeDispatchOptions (seed 000), durations in milliseconds; batchSize, maxRunMs (MaxRunDuration) and idleWaitMs are the kernel's. */
export interface DispatchSettings extends BatchSettings {
  /** PollingInterval: the job's timer; a committed row also wakes it (NOTIFY, or connectWake in this replica). */
  pollingIntervalMs: number;
  maxAttempts: number;
  /** BackoffBase / BackoffFactor / BackoffCap and jitter of the delay the claim sets before a retry. */
  backoff: Backoff;
  /** A row's push not finished by then is a failed attempt. */
  pushTimeoutMs: number;
}

export interface PushDispatchDeps extends Omit<DispatchStepsDeps, 'maxAttempts' | 'backoff' | 'pushTimeoutMs'> {
  settings: DispatchSettings;
  /** Hands the runner's in-process wake and its own NOTIFY payload to the owner that commits rows (the send queue). */
  connectWake?: (wake: () => void, notifyPayload: string) => void;
}

/**
 * RealtimeDispatchJob (seed 000): persist-then-push from push.realtime_outbox to the hub.
 * Single runner (advisory lock held at most LockTtl; busy → the run is skipped), every PollingInterval and at once on
 * NOTIFY realtime_outbox from the owner's committing transaction (or sooner through connectWake in
 * the replica that committed). Each batch:
 *
 *   3–4. claim due Pending rows in one statement (SKIP LOCKED, Attempts + 1, NextAttemptAt by the
 *        backoff); rows already out of attempts are quarantined by it and alerted;
 *   5.   build and push each row outside any transaction, in push order, each within the push
 *        timeout, stopping between rows when asked or past MaxRunDuration (the rest are released:
 *        Pending, attempt given back, claimable at once);
 *        record the batch's outcomes in one statement, each on the RowVersion its claim left —
 *        while the next batch is claimed and pushed (that claim leaves these rows alone);
 *   8.   the run's dispatched / retried / quarantined, logged at the end.
 *
 * Batches repeat while full, or woken by a commit, within MaxRunDuration; a drained run stays
 * idleWaitMs for the next commit, so a steady stream of sends is served by one run.
 */
export function pushDispatchJob(deps: PushDispatchDeps): BatchWorker {
  const { settings } = deps;
  const steps = createDispatchSteps({ ...deps, maxAttempts: settings.maxAttempts, backoff: settings.backoff, pushTimeoutMs: settings.pushTimeoutMs });

  return defineBatchWorker({
    name: REALTIME_DISPATCH_JOB,
    every: settings.pollingIntervalMs,
    singleRunner: true,
    wakeChannel: REALTIME_OUTBOX_CHANNEL,
    ...(deps.connectWake ? { connectWake: deps.connectWake } : {}),
    settings,
    // The seed's "job completed (dispatched, retried, quarantined, DurationMs)" is the kernel's line.
    counts: DISPATCH_COUNTS,
    phases() {
      return [
        batchPhase<DispatchRow, DispatchResult>({
          name: 'outbox',
          overlapRecord: true,
          // Seed 000 "Traces": a child span per row dispatch with Kind and ChatId.
          traceRow: {
            name: 'dispatch',
            attributes: (r) => ({ id: r.id, Kind: r.kind, ...(r.chatId ? { ChatId: r.chatId } : {}), attempts: r.attempts }),
          },
          claim: steps.claim,
          process: steps.push,
          record: steps.record,
        }),
      ];
    },
  });
}
