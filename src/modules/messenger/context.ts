import type { MessengerSettings } from './settings.ts';
import type { MessengerOptions } from './options.ts';
import type { ModuleDeps } from '../../platform/module.ts';
import type { UserSyncDeps } from './user-replica/apply.ts';

/**
 * What the routes and operations of the chats, messages, contacts and calls parts share. What only
 * one part takes (the calls' join minter, the messages' send queue and file lookup, the files' deps)
 * is that part's extension of it (calls/media-join.ts CallsContext, messages/context.ts
 * MessagesContext), so this file, below them all, imports none of them.
 */
export interface MessengerContext extends Omit<ModuleDeps<MessengerSettings>, 'settings'> {
  /** The messenger's settings as its parts take them (options.ts). */
  options: MessengerOptions;
  /** The user replica consumer's dependencies, shared with its resync runbook call. */
  userSync: UserSyncDeps;
}
