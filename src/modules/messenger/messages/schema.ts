import { sql } from 'drizzle-orm';
import { bigint, check, index, jsonb, primaryKey, text, uniqueIndex, uuid, varchar } from 'drizzle-orm/pg-core';
import { MESSAGE_CONTENT_KINDS } from '../model/message-kinds.ts';
import { chats } from '../chats/schema.ts';
import { messengerSchema, oneOf, timestamptz as ts } from '../schema.ts';
import { MESSAGE_SEARCH_VECTOR, tsvector } from './search-text.ts';

/** Messages (seed 000; drizzle part messenger.realtime). */

/** Message (message.md). A deleted message keeps its Seq as a tombstone, so the Seq stream stays gapless. */
export const messages = messengerSchema.table(
  'messages',
  {
    id: uuid('id').primaryKey(),
    chatId: uuid('chat_id')
      .notNull()
      .references(() => chats.id, { onDelete: 'cascade' }),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    senderUserId: uuid('sender_user_id').notNull(),
    kind: varchar('kind', { length: 8 }).notNull(),
    body: text('body'),
    fileMeta: jsonb('file_meta'),
    cardText: text('card_text'),
    sentAt: ts('sent_at').notNull(),
    editedAt: ts('edited_at'),
    deletedAt: ts('deleted_at'),
    /** The id the sender's client picked for this message once: a repeated send with it answers this row. */
    clientMessageId: uuid('client_message_id'),
    /**
     * The user this message is withheld from: in a Direct chat, the other member when they had blocked
     * the sender at the send (Signal/WhatsApp: the blocked are never told, the blocker never sees it).
     * Kept after an unblock: a withheld message stays withheld (docs/security.md, "Blocked means blocked").
     */
    withheldFrom: uuid('withheld_from'),
    /** The message of the same chat this one replies to (replies.ts); a tombstone parent stays, so no foreign key is needed. */
    replyToMessageId: uuid('reply_to_message_id'),
    /** Members of a Group chat the message mentions (user ids, sorted, unique), for their notifications. */
    mentionedUserIds: uuid('mentioned_user_ids').array().notNull().default(sql`'{}'::uuid[]`),
    /** The message's words for search (search-text.ts), kept by PostgreSQL on every insert and edit. */
    searchVector: tsvector('search_vector').generatedAlwaysAs(MESSAGE_SEARCH_VECTOR),
  },
  (t) => [
    uniqueIndex('ux_messages_chat_seq').on(t.chatId, t.seq),
    // Unique per sender: the key of an idempotent send (a concurrent repeat fails on it and is answered the stored row).
    uniqueIndex('ux_messages_sender_client_message_id').on(t.senderUserId, t.clientMessageId).where(sql`${t.clientMessageId} is not null`),
    // Message search (search.ts): the chat and the text's words in one GIN index (btree_gin), so a
    // search reads only the caller's chats' matches instead of every chat's and filtering after.
    index('ix_messages_search').using('gin', t.chatId, t.searchVector),
    // The live messages naming a file (a deleted one's file_meta is null): whether a file may be
    // downloaded by a member, and whether a delete leaves it named by none (files/).
    index('ix_messages_file_id').on(sql`(${t.fileMeta}->>'fileId')`).where(sql`${t.fileMeta} is not null`),
    check('ck_messages_kind', oneOf(t.kind, MESSAGE_CONTENT_KINDS)),
    check('ck_messages_seq', sql`${t.seq} >= 1`),
  ],
);

/**
 * A user's emoji reactions on a message (reactions.ts): one row per (message, user, emoji). A removed
 * reaction keeps its row with removed_at set, so its reaction_changed frame — built at delivery from
 * `id`, the push row's RefId — can still say which emoji was taken back; adding it again revives the row.
 */
export const messageReactions = messengerSchema.table(
  'message_reactions',
  {
    messageId: uuid('message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    userId: uuid('user_id').notNull(),
    /** One fully-qualified RGI emoji (reaction-rules.ts). */
    emoji: varchar('emoji', { length: 32 }).notNull(),
    id: uuid('id').notNull(),
    createdAt: ts('created_at').notNull(),
    removedAt: ts('removed_at'),
  },
  (t) => [
    primaryKey({ columns: [t.messageId, t.userId, t.emoji] }),
    uniqueIndex('ux_message_reactions_id').on(t.id),
    // The reactions retention's pick (reactions-retention.job.ts): only taken-back rows, a small part of the table.
    index('ix_message_reactions_removed').on(t.removedAt).where(sql`${t.removedAt} is not null`),
  ],
);
