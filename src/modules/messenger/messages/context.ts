import type { Principal } from '../../../platform/http/index.ts';
import type { MessengerContext } from '../context.ts';
import type { FileMeta } from './rules.ts';
import type { SendQueue } from './send-batch.ts';

/** What the messages part takes beside the shared context. */
export interface MessagesContext extends MessengerContext {
  /** Concurrent message sends, coalesced into batches. */
  sends: SendQueue;
  /** A File message's metadata from the file its fileId names (files/files.ts fileForMessage: a higher floor, wired in index.ts). */
  fileForMessage: (caller: Principal, chatId: string, fileId: string) => Promise<FileMeta>;
}
