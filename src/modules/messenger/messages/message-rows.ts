import { sql } from 'drizzle-orm';
import { isoOf } from '../sql-rows.ts';
import type { FileMeta } from './rules.ts';
import type { MessageContentKind } from '../model/message-kinds.ts';

/** A message row as the messenger's statements return it, and the view clients get of it. */

export interface MessageRow {
  id: string;
  chatId: string;
  seq: number;
  senderUserId: string;
  kind: MessageContentKind;
  body: string | null;
  fileMeta: FileMeta | null;
  cardText: string | null;
  /** Date as `query` reads it; text when the row comes as JSON (the send statements' `row_to_json`). */
  sentAt: Date | string;
  editedAt: Date | string | null;
  deletedAt: Date | string | null;
  /** The id the sender's client picked once for this message (idempotent sends), or null. */
  clientMessageId: string | null;
}

/** One emoji's reactions on a message as a viewer sees them (reactions.ts). */
export interface ReactionView {
  emoji: string;
  count: number;
  mine: boolean;
}

/** What clients see: the row with `deleted` instead of the deletion time, and the reactions (none until reactions.ts fills them in). */
export type MessageView = Omit<MessageRow, 'sentAt' | 'editedAt' | 'deletedAt'> & { sentAt: string; editedAt: string | null; deleted: boolean; reactions: ReactionView[] };

export const MESSAGE_COLUMNS = sql.raw(`id, chat_id as "chatId", seq::float8 as seq, sender_user_id as "senderUserId", kind, body,
  file_meta as "fileMeta", card_text as "cardText", sent_at as "sentAt", edited_at as "editedAt", deleted_at as "deletedAt",
  client_message_id as "clientMessageId"`);

export const messageView = (m: MessageRow): MessageView => ({
  id: m.id,
  chatId: m.chatId,
  seq: m.seq,
  senderUserId: m.senderUserId,
  kind: m.kind,
  body: m.body,
  fileMeta: m.fileMeta,
  cardText: m.cardText,
  sentAt: isoOf(m.sentAt)!,
  editedAt: isoOf(m.editedAt),
  deleted: m.deletedAt !== null,
  clientMessageId: m.clientMessageId,
  reactions: [],
});
