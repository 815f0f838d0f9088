import type { Db } from '../db/index.ts';

/**
 * The row shape of the durable push path (table push.realtime_outbox, seed 000, and its event
 * stream push.realtime_events): typed references and a kind, never a body. The kinds and what
 * they point at belong to the modules that write them; the push part reads them as plain strings.
 */

/** What a push row points at, as stored in the outbox and in the stream. */
export interface PushRow {
  id: string;
  /** The kind, owned by the module that registered it (messenger: MessageReceived, …; notifications: NotificationStatusChanged). */
  kind: string;
  /** ChatGroup (chat:{ChatId}) or User (user:{TargetUserId}). */
  targetKind: string;
  chatId: string | null;
  targetUserId: string | null;
  messageId: string | null;
  refId: string | null;
  sessionKind: string | null;
  seq: number | null;
  /** A carried kind's frame payload as its owner wrote it; absent or null for a referenced kind. */
  payload?: Record<string, unknown> | null;
}

/** A frame for `user:{UserId}` a module hands to the durable push path (the userFrames port). */
export interface UserFrame {
  userId: string;
  /** The hub event name (e.g. notification_status_changed): the event of a carried kind its module registered. */
  event: string;
  /** Ids, enums, codes and times only: it is stored as is and replayed from the user's event stream. */
  payload: Record<string, unknown>;
}

/**
 * Writes frames in the caller's transaction (the transactional outbox): pushed only once committed,
 * retried while the backplane is down, each carrying `Cursor` and kept in the user's resumable event
 * stream. The push part's own (Push.userFrames), handed to every module in ModuleDeps.
 */
export type UserFrames = (tx: Db, frames: readonly UserFrame[], now: Date) => Promise<void>;

/** The hub event name of a kind: snake_case of its name (MessageReceived → message_received). */
export const eventNameOf = (kind: string): string => kind.replace(/(?<!^)([A-Z])/g, '_$1').toLowerCase();
