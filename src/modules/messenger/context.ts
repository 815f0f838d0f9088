import type { MessengerSettings } from './settings.ts';
import type { ModuleDeps } from '../../platform/module.ts';
import type { MediaJoinMinter } from './calls/media-join.ts';
import type { SendQueue } from './messages/send-batch.ts';

/** What the routes and operations of the chats, messages, contacts and calls parts share. */
export interface MessengerContext extends ModuleDeps<MessengerSettings> {
  mintJoin: MediaJoinMinter;
  /** Concurrent message sends, coalesced into batches. */
  sends: SendQueue;
}
