import type { BatchWorker } from '../../../platform/jobs/index.ts';
import { createPush, pushDispatchJob, type DispatchSettings, type PushDispatchDeps, type PushKinds } from '../../../platform/push/index.ts';
import type { MediaJoinMinter } from '../calls/media-join.ts';
import type { MessengerSettings, MessengerTuning } from '../settings.ts';
import { messengerPushKinds } from './register.ts';

export { REALTIME_DISPATCH_JOB, type DispatchSettings } from '../../../platform/push/index.ts';

/**
 * A run with nothing left to claim stays this long for the next commit's wake, so a steady stream of
 * sends is served by one run per MaxRunDuration (fixed; once MESSENGER_REALTIME_IDLE_WAIT_MS).
 */
const REALTIME_IDLE_WAIT_MS = 250;

/**
 * The one mapping from the messenger's settings to the job's options; loadConfig validated them
 * (bounds, and the cap ≥ base and LockTtl ≥ MaxRunDuration + margin across fields), so the job
 * takes them as they are.
 */
export const dispatchSettingsOf = (s: MessengerSettings, t: Pick<MessengerTuning, 'realtimePushTimeoutMs'>): DispatchSettings => ({
  pollingIntervalMs: s.MESSENGER_REALTIME_POLLING_INTERVAL,
  batchSize: s.MESSENGER_REALTIME_BATCH_SIZE,
  maxRunMs: s.MESSENGER_REALTIME_MAX_RUN_DURATION,
  lockTtlMs: s.MESSENGER_REALTIME_LOCK_TTL,
  pushTimeoutMs: t.realtimePushTimeoutMs,
  idleWaitMs: REALTIME_IDLE_WAIT_MS,
  maxAttempts: s.MESSENGER_REALTIME_MAX_ATTEMPTS,
  backoff: {
    baseMs: s.MESSENGER_REALTIME_BACKOFF_BASE,
    factor: s.MESSENGER_REALTIME_BACKOFF_FACTOR,
    capMs: s.MESSENGER_REALTIME_BACKOFF_CAP,
    jitter: s.MESSENGER_REALTIME_BACKOFF_JITTER,
  },
});

export interface RealtimeDispatchDeps extends Omit<PushDispatchDeps, 'kinds'> {
  mintJoin: MediaJoinMinter;
  /** The push part's registered kinds (the app's, the messenger's among them); absent: the messenger's alone. */
  kinds?: PushKinds;
}

/**
 * The RealtimeDispatchJob (seed 000) of the kernel's push part (platform/push/dispatch.job.ts) over
 * the registered kinds; without `kinds` (a dispatcher built on its own, as the tests and a second
 * runner do) over a push part holding the messenger's kinds alone.
 */
export function realtimeDispatchJob(deps: RealtimeDispatchDeps): BatchWorker {
  const { mintJoin, kinds, ...rest } = deps;
  return pushDispatchJob({ ...rest, kinds: kinds ?? ownKinds(mintJoin) });
}

function ownKinds(mintJoin: MediaJoinMinter): PushKinds {
  const push = createPush();
  push.registerKinds(messengerPushKinds(mintJoin));
  return push.kinds;
}
