import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { CHAT_COLUMNS, type ChatRow } from './chat-sql.ts';

/**
 * The chat list's statements: a page of the caller's chats, each with its unread count and its last
 * message, in one statement however long the page (chat-sync.ts adds the participants in one more).
 */

/** The chat's last message as the chat list previews it (null for a chat without messages). */
export interface LastMessageRow {
  id: string;
  seq: number;
  senderUserId: string;
  kind: string;
  /** At most LAST_MESSAGE_PREVIEW_CHARS characters of a Text body; null for other kinds and deleted messages. */
  preview: string | null;
  deleted: boolean;
  sentAt: Date;
}

/** A listed chat: with the caller's unread count and the chat's last message. */
export type ListedChatRow = ChatRow & { unreadCount: number; lastMessage: LastMessageRow | null };

/** How much of a Text body the chat list shows (characters, as PostgreSQL's left() counts them: code points). */
export const LAST_MESSAGE_PREVIEW_CHARS = 100;

/** The unread count of the caller's participation `p` in chat `c`, as a column. */
const UNREAD = sql.raw(`(select count(*) from messenger.messages m
    where m.chat_id = c.id and m.seq > p.last_read_seq and m.sender_user_id <> p.user_id and m.deleted_at is null
      and m.withheld_from is distinct from p.user_id)::int as "unreadCount"`);

/**
 * The last message's columns: the newest message at or below the chat's last_seq that the caller
 * can read, read backwards through ux_messages_chat_seq in the list's own statement (no query per
 * chat). Seq is gapless and a deletion leaves a tombstone, so that is the message at last_seq
 * (the first index entry read) unless it is withheld from the caller (send.ts).
 */
const LAST_MESSAGE = sql.raw(`lm.id as "lmId", lm.seq::float8 as "lmSeq", lm.sender_user_id as "lmSenderUserId", lm.kind as "lmKind",
    case when lm.kind = 'Text' and lm.deleted_at is null then left(lm.body, ${LAST_MESSAGE_PREVIEW_CHARS}) end as "lmPreview",
    lm.deleted_at is not null as "lmDeleted", lm.sent_at as "lmSentAt"`);
const LAST_MESSAGE_JOIN = sql.raw(`left join lateral (
      select * from messenger.messages v
       where v.chat_id = c.id and v.seq <= c.last_seq and v.withheld_from is distinct from p.user_id
       order by v.seq desc limit 1) lm on true`);

type RawListedRow = ChatRow & {
  unreadCount: number;
  lmId: string | null;
  lmSeq: number;
  lmSenderUserId: string;
  lmKind: string;
  lmPreview: string | null;
  lmDeleted: boolean;
  lmSentAt: Date;
};

const listedRow = ({ lmId, lmSeq, lmSenderUserId, lmKind, lmPreview, lmDeleted, lmSentAt, ...chat }: RawListedRow): ListedChatRow => ({
  ...chat,
  lastMessage: lmId === null ? null : { id: lmId, seq: lmSeq, senderUserId: lmSenderUserId, kind: lmKind, preview: lmPreview, deleted: lmDeleted, sentAt: lmSentAt },
});

/** Those of the chats that the user is an Active participant of, with the user's unread counts. */
export async function chatsOfUserByIds(q: Db, userId: string, chatIds: readonly string[]): Promise<ListedChatRow[]> {
  if (chatIds.length === 0) return [];
  const { rows } = await query<RawListedRow>(
    q,
    sql`select ${CHAT_COLUMNS}, ${UNREAD}, ${LAST_MESSAGE} from messenger.chats c
          join messenger.chat_participants p on p.chat_id = c.id and p.user_id = ${userId} and p.status = 'Active'
          ${LAST_MESSAGE_JOIN}
         where c.id = any(${sql.param(chatIds)}::uuid[])`,
  );
  return rows.map(listedRow);
}

/** The chats a user is an Active participant of, most recently active first (keyset on updatedAt, id). */
export async function chatsOfUser(q: Db, userId: string, limit: number, before?: { updatedAt: string; id: string }): Promise<ListedChatRow[]> {
  const { rows } = await query<RawListedRow>(
    q,
    sql`select ${CHAT_COLUMNS}, ${UNREAD}, ${LAST_MESSAGE} from messenger.chats c
          join messenger.chat_participants p on p.chat_id = c.id and p.user_id = ${userId} and p.status = 'Active'
          ${LAST_MESSAGE_JOIN}
         ${before ? sql`where (c.updated_at, c.id) < (${before.updatedAt}::timestamptz, ${before.id}::uuid)` : sql``}
         order by c.updated_at desc, c.id desc limit ${limit}`,
  );
  return rows.map(listedRow);
}
