import type { ModuleDeps } from '../../platform/module.ts';
import type { MediaJoinMinter } from './calls/media-join.ts';
import type { SendQueue } from './messages/send-batch.ts';
import type { RealtimeMetrics } from './realtime-dispatch/metrics.ts';

/** What the chats, messages, contacts, calls and conferences routes share. */
export interface RealtimeContext extends ModuleDeps {
  metrics: RealtimeMetrics;
  mintJoin: MediaJoinMinter;
  /** Concurrent message sends, coalesced into batches. */
  sends: SendQueue;
}
