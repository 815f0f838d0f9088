import type { MessengerSettings } from './settings.ts';
import type { MessengerOptions } from './options.ts';
import type { ModuleDeps } from '../../platform/module.ts';
import type { MediaJoinMinter } from './calls/media-join.ts';
import type { SendQueue } from './messages/send-batch.ts';
import type { UserSyncDeps } from './user-replica/apply.ts';
import type { FilesDeps } from './files/files.ts';
import type { FileMeta } from './messages/rules.ts';
import type { Principal } from '../../platform/http/index.ts';

/** What the routes and operations of the chats, messages, contacts and calls parts share. */
export interface MessengerContext extends Omit<ModuleDeps<MessengerSettings>, 'settings'> {
  /** The messenger's settings as its parts take them (options.ts). */
  options: MessengerOptions;
  mintJoin: MediaJoinMinter;
  /** Concurrent message sends, coalesced into batches. */
  sends: SendQueue;
  /** The user replica consumer's dependencies, shared with its resync runbook call. */
  userSync: UserSyncDeps;
  /** The files of File messages: their rows, the object store (when configured) and options. */
  files: FilesDeps;
  /** A File message's metadata from the file its fileId names (files/files.ts fileForMessage: a higher floor, wired in index.ts). */
  fileForMessage: (caller: Principal, chatId: string, fileId: string) => Promise<FileMeta>;
}
