import { sql } from 'drizzle-orm';
import { isoOf } from '../sql-rows.ts';
import type { FileMeta } from './rules.ts';
import type { MessageContentKind } from '../model/message-kinds.ts';
import type { ReplyPreview } from './reply-preview.ts';

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
  /** The parent of a reply (replies.ts), or null. */
  replyToMessageId: string | null;
  /** The members the message mentions (Group chats), or none. */
  mentionedUserIds: string[];
}

/** One emoji's reactions on a message as a viewer sees them (reactions.ts). */
export interface ReactionView {
  emoji: string;
  count: number;
  mine: boolean;
}

/** What clients see: the row with `deleted` instead of the deletion time. */
export type MessageView = Omit<MessageRow, 'sentAt' | 'editedAt' | 'deletedAt' | 'replyToMessageId'> & {
  sentAt: string;
  editedAt: string | null;
  deleted: boolean;
  /** The parent's preview (replies.ts fills it: messageViews). */
  replyTo: ReplyPreview | null;
  /** The reactions as the viewer sees them (none until reactions.ts fills them in). */
  reactions: ReactionView[];
};

export const MESSAGE_COLUMNS = sql.raw(`id, chat_id as "chatId", seq::float8 as seq, sender_user_id as "senderUserId", kind, body,
  file_meta as "fileMeta", card_text as "cardText", sent_at as "sentAt", edited_at as "editedAt", deleted_at as "deletedAt",
  client_message_id as "clientMessageId", reply_to_message_id as "replyToMessageId", mentioned_user_ids as "mentionedUserIds"`);

/** The view without its reply preview: messageViews (replies.ts) is what answers clients. */
export const messageView = (m: MessageRow, replyTo: ReplyPreview | null = null): MessageView => ({
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
  replyTo,
  mentionedUserIds: m.mentionedUserIds,
});
