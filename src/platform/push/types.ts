/**
 * The row shape of the durable push path (table messenger.realtime_outbox, seed 000, and its event
 * stream messenger.realtime_events): typed references and a kind, never a body. The kinds and what
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
