import { sql } from 'drizzle-orm';
import { Value } from '@sinclair/typebox/value';
import { Uuid } from '../../../platform/types/index.ts';
import { AppError, type Principal } from '../../../platform/http/index.ts';
import { query, type Db } from '../../../platform/db/index.ts';
import { chatForParticipant } from '../chats/chat-sql.ts';
import { contentProblem, isEditable, withinEditWindow } from './rules.ts';
import type { MessagesContext } from './context.ts';
import { ChatErrors } from '../errors.ts';
import { activeUserTransaction, requireActiveCaller } from '../user-replica/replica-reads.ts';
import { enqueueRealtime } from '../model/push-rows.ts';
import { ownDevicesOnly } from '../model/reaction-visibility.ts';
import { MESSAGE_COLUMNS, type MessageRow, type MessageView } from './message-rows.ts';
import { withReactions } from './reactions.ts';
import { messageViews } from './replies.ts';

/** A sender may edit a message this many seconds after sending it (UC-MSG-003; once MESSENGER_REALTIME_EDIT_WINDOW_SECONDS). */
export const EDIT_WINDOW_SECONDS = 60;

/**
 * Messages (message.md): edit, delete, list-messages and read receipts (sending is in
 * send.ts). Each change writes its realtime push intent in the same transaction. A deleted
 * message stays as a tombstone without content.
 */

async function requireChat(q: Db, chatId: string, userId: string, lock = false) {
  const chat = await chatForParticipant(q, chatId, userId, { lock });
  if (!chat) throw ChatErrors.chatNotFound();
  return chat;
}

/** The message, locked, when the caller sees the chat and may change it (its sender, or an admin when allowed). */
async function lockMessage(tx: Db, chatId: string, messageId: string, caller: Principal, adminMay: boolean): Promise<MessageRow & { withheldFrom: string | null }> {
  await requireChat(tx, chatId, caller.userId);
  // A message withheld from the caller does not exist for them.
  const { rows: [m] } = await query<MessageRow & { withheldFrom: string | null }>(
    tx,
    sql`select ${MESSAGE_COLUMNS}, withheld_from as "withheldFrom" from messenger.messages
         where id = ${messageId} and chat_id = ${chatId} and withheld_from is distinct from ${caller.userId} for update`,
  );
  if (!m) throw ChatErrors.messageNotFound();
  if (m.senderUserId !== caller.userId && !(adminMay && caller.admin)) throw ChatErrors.notSender();
  return m;
}

/** Who a message's changes are pushed to: the chat, or only its sender's devices when it is withheld from the other member (send.ts). */
const audienceOf = (m: MessageRow & { withheldFrom: string | null }) =>
  m.withheldFrom === null ? { targetKind: 'ChatGroup' as const } : { targetKind: 'User' as const, targetUserId: m.senderUserId };

/** The sender edits a text or card message within the edit window, 60 s by default (UC-MSG-003). */
export async function editMessage(
  ctx: MessagesContext,
  caller: Principal,
  chatId: string,
  messageId: string,
  change: { body?: string; cardText?: string },
): Promise<MessageView> {
  await requireActiveCaller(ctx.db, caller.userId);
  const now = ctx.clock.now();
  const window = EDIT_WINDOW_SECONDS;
  return activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const m = await lockMessage(tx, chatId, messageId, caller, false);
    if (m.deletedAt !== null) throw ChatErrors.messageDeleted();
    if (!isEditable(m.kind)) throw ChatErrors.notEditable();
    if (!withinEditWindow(new Date(m.sentAt), now, window)) throw ChatErrors.editWindowExpired(window);
    const problem = contentProblem({ kind: m.kind, ...change });
    if (problem) throw ChatErrors.invalidMessage(problem);
    const [row] = (await query<MessageRow>(
      tx,
      sql`update messenger.messages set body = ${change.body ?? null}, card_text = ${change.cardText ?? null}, edited_at = ${now.toISOString()}
           where id = ${messageId} returning ${MESSAGE_COLUMNS}`,
    )).rows as [MessageRow];
    await enqueueRealtime(ctx.push, tx, [{ kind: 'MessageEdited', ...audienceOf(m), chatId, messageId, seq: m.seq }], now);
    return (await withReactions(tx, caller.userId, await messageViews(tx, [row])))[0]!;
  });
}

/** The sender (or an admin) deletes: the content is erased, the Seq stays as a tombstone. Deleting twice is a no-op. */
export async function deleteMessage(ctx: MessagesContext, caller: Principal, chatId: string, messageId: string): Promise<void> {
  const now = ctx.clock.now();
  await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const m = await lockMessage(tx, chatId, messageId, caller, true);
    if (m.deletedAt !== null) return;
    await query(
      tx,
      sql`update messenger.messages set body = null, file_meta = null, card_text = null, deleted_at = ${now.toISOString()} where id = ${messageId}`,
    );
    // Only a file the service issued (a UUID) has bytes here; older messages may name another storage's id.
    if (m.fileMeta && Value.Check(Uuid, m.fileMeta.fileId)) await releaseFile(tx, m.fileMeta.fileId, now);
    await enqueueRealtime(ctx.push, tx, [{ kind: 'MessageDeleted', ...audienceOf(m), chatId, messageId, seq: m.seq }], now);
  });
}

/**
 * A deleted File message's file, when no live message names it any more, becomes `Deleted` in the
 * delete's own transaction: the files sweep deletes its bytes and row (files/sweep.job.ts), so a crash
 * after this commit still leaves the bytes to the sweep. The file's row is locked first, and the
 * check is a statement of its own: two deletes of the two messages naming one file run one after the
 * other, and the second sees the first's commit (READ COMMITTED), so one of them marks it.
 */
async function releaseFile(tx: Db, fileId: string, now: Date): Promise<void> {
  await query(tx, sql`select 1 from messenger.files where id = ${fileId} for update`);
  await query(tx, sql`update messenger.files set status = 'Deleted', updated_at = ${now.toISOString()}
    where id = ${fileId} and status = 'Ready'
      and not exists (select 1 from messenger.messages where file_meta is not null and file_meta->>'fileId' = ${fileId} and deleted_at is null)`);
}

/**
 * list-messages, the source of truth clients refill from: Seq > afterSeq ascending, or — paging
 * back through history — the newest `limit` below beforeSeq, still handed back in ascending order so
 * both directions read the same way. Tombstones included. Messages withheld from the caller (send.ts)
 * are left out: a page is every message the caller can read in its range, so a Seq it skips does
 * not exist for them (the client library moves past it).
 */
export async function listMessages(
  q: Db,
  caller: Principal,
  chatId: string,
  page: { afterSeq?: number; beforeSeq?: number },
  limit: number,
): Promise<{ items: MessageView[]; lastSeq: number; hasMore: boolean }> {
  if (page.afterSeq !== undefined && page.beforeSeq !== undefined) {
    throw new AppError('VALIDATION_FAILED', 'afterSeq and beforeSeq are mutually exclusive: pass one of them', 400);
  }
  const chat = await requireChat(q, chatId, caller.userId);
  const visible = sql`withheld_from is distinct from ${caller.userId}`;
  // One row past the page says whether there is more, without a count.
  const { rows } =
    page.beforeSeq === undefined
      ? await query<MessageRow>(
          q,
          sql`select ${MESSAGE_COLUMNS} from messenger.messages where chat_id = ${chatId} and seq > ${page.afterSeq ?? 0} and ${visible} order by seq limit ${limit + 1}`,
        )
      : await query<MessageRow>(
          q,
          sql`select * from (select ${MESSAGE_COLUMNS} from messenger.messages where chat_id = ${chatId} and seq < ${page.beforeSeq} and ${visible}
                              order by seq desc limit ${limit + 1}) older
               order by seq`,
        );
  const hasMore = rows.length > limit;
  // The row past the page is the newest going forward, the oldest going back (rows are ascending).
  const items = !hasMore ? rows : page.beforeSeq === undefined ? rows.slice(0, limit) : rows.slice(1);
  return { items: await withReactions(q, caller.userId, await messageViews(q, items)), lastSeq: chat.lastSeq, hasMore };
}

/**
 * Read receipt: LastReadSeq only moves forward, up to the chat's LastSeq; a change is pushed as
 * ReadReceiptUpdated — to the chat, or only to the reader's own devices while the chat is a
 * message request to them or, in a Direct chat, either side blocks the other (docs/security.md, "Consent").
 */
export async function markRead(ctx: MessagesContext, caller: Principal, chatId: string, seq: number): Promise<{ lastReadSeq: number }> {
  const now = ctx.clock.now();
  return activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const chat = await requireChat(tx, chatId, caller.userId);
    const target = Math.min(seq, chat.lastSeq);
    const me = caller.userId;
    const { rows: [moved] } = await query<{ id: string; lastReadSeq: number; private: boolean }>(
      tx,
      sql`update messenger.chat_participants set last_read_seq = ${target}, updated_at = ${now.toISOString()}
           where chat_id = ${chatId} and user_id = ${me} and status = 'Active' and last_read_seq < ${target}
           returning id, last_read_seq::float8 as "lastReadSeq", ${ownDevicesOnly(me, chatId, 'messenger.chat_participants')} as private`,
    );
    if (!moved) {
      const { rows: [p] } = await query<{ lastReadSeq: number }>(
        tx,
        sql`select last_read_seq::float8 as "lastReadSeq" from messenger.chat_participants where chat_id = ${chatId} and user_id = ${caller.userId}`,
      );
      return { lastReadSeq: p?.lastReadSeq ?? 0 };
    }
    const to = moved.private ? { targetKind: 'User' as const, targetUserId: me } : { targetKind: 'ChatGroup' as const };
    await enqueueRealtime(ctx.push, tx, [{ kind: 'ReadReceiptUpdated', ...to, chatId, refId: moved.id, seq: moved.lastReadSeq }], now);
    return { lastReadSeq: moved.lastReadSeq };
  });
}
