import { sql } from 'drizzle-orm';
import type { Principal } from '../../../platform/http/index.ts';
import { query, type Db } from '../../../platform/db/index.ts';
import { newId } from '../../../platform/time.ts';
import type { MessengerContext } from '../context.ts';
import { ChatErrors } from '../errors.ts';
import { enqueueRealtime } from '../model/push-rows.ts';
import { ownDevicesOnly, reactionCountsFor } from '../model/reaction-visibility.ts';
import { activeUserTransaction } from '../user-replica/replica-reads.ts';
import type { MessageView, ReactionView } from './message-rows.ts';
import { REACTIONS_PER_USER_MAX, reactionEmoji } from './reaction-rules.ts';

/**
 * Reactions: a member adds or takes back an emoji on a message they can read. Both are
 * idempotent — a change writes its reaction_changed push intent in the same transaction, a repeat
 * writes nothing. Whose reactions count for whom: model/reaction-visibility.ts.
 */

/** Each message's reactions as `viewer` sees them: one statement for a whole page (history, search), by count then emoji. */
export async function reactionsOf(q: Db, viewer: string, messageIds: readonly string[]): Promise<Map<string, ReactionView[]>> {
  const byMessage = new Map<string, ReactionView[]>();
  if (messageIds.length === 0) return byMessage;
  const me = sql`${viewer}`;
  const { rows } = await query<ReactionView & { messageId: string }>(
    q,
    // A deleted message's reactions are kept but not shown: a tombstone has none.
    sql`select r.message_id as "messageId", r.emoji, count(*)::int as count, bool_or(r.user_id = ${viewer}) as mine
          from messenger.message_reactions r join messenger.messages m on m.id = r.message_id and m.deleted_at is null
         where r.message_id = any(${sql.param([...messageIds])}::uuid[]) and r.removed_at is null
           and ${reactionCountsFor(me, sql`r.user_id`, sql`m.chat_id`)}
         group by r.message_id, r.emoji
         order by r.message_id, count(*) desc, r.emoji collate "C"`,
  );
  for (const { messageId, ...r } of rows) byMessage.set(messageId, [...(byMessage.get(messageId) ?? []), r]);
  return byMessage;
}

/** The views with their reactions as `viewer` sees them filled in (one statement). */
export async function withReactions<T extends MessageView>(q: Db, viewer: string, views: T[]): Promise<T[]> {
  const byMessage = await reactionsOf(q, viewer, views.map((v) => v.id));
  return views.map((v) => ({ ...v, reactions: byMessage.get(v.id) ?? [] }));
}

interface Target {
  /** Whether what the caller does here stays on their own devices (as read receipts: messages.ts markRead). */
  private: boolean;
  messageFound: boolean;
  deleted: boolean;
  withheld: boolean;
}

/**
 * The caller's participation (locked: one user's reactions in a chat take turns, so the per-message
 * limit holds) and the message as they may see it, in one statement.
 */
async function lockTarget(tx: Db, me: string, chatId: string, messageId: string): Promise<Target> {
  const { rows: [t] } = await query<Target>(
    tx,
    sql`select ${ownDevicesOnly(me, chatId, 'p')} as private,
               m.id is not null as "messageFound", m.deleted_at is not null as deleted, m.withheld_from is not null as withheld
          from messenger.chat_participants p
          left join messenger.messages m on m.id = ${messageId} and m.chat_id = ${chatId} and m.withheld_from is distinct from ${me}
         where p.chat_id = ${chatId} and p.user_id = ${me} and p.status = 'Active'
           for no key update of p`,
  );
  if (!t) throw ChatErrors.chatNotFound();
  if (!t.messageFound) throw ChatErrors.messageNotFound();
  if (t.deleted) throw ChatErrors.messageDeleted();
  return t;
}

export interface ReactionReply {
  messageId: string;
  reactions: ReactionView[];
}

/** What a reaction change answers: the message's reactions as the caller now sees them. */
async function replyOf(tx: Db, me: string, messageId: string): Promise<ReactionReply> {
  return { messageId, reactions: (await reactionsOf(tx, me, [messageId])).get(messageId) ?? [] };
}

/** Add (`added`) or take back the caller's reaction: idempotent; a change is pushed as reaction_changed. */
export async function setReaction(
  ctx: MessengerContext,
  caller: Principal,
  target: { chatId: string; messageId: string; emoji: string },
  added: boolean,
): Promise<ReactionReply> {
  const emoji = reactionEmoji(target.emoji);
  if (emoji === undefined) throw ChatErrors.reactionInvalid();
  const { chatId, messageId } = target;
  const me = caller.userId;
  const now = ctx.clock.now();
  return activeUserTransaction(ctx.db, me, async (tx) => {
    const t = await lockTarget(tx, me, chatId, messageId);
    const changed = added ? await addRow(tx, me, messageId, emoji, now) : await removeRow(tx, me, messageId, emoji, now);
    if (changed) {
      // A message withheld from the other member (send.ts) stays unknown to them: so does a reaction on it.
      const to = t.private || t.withheld ? { targetKind: 'User' as const, targetUserId: me } : { targetKind: 'ChatGroup' as const };
      await enqueueRealtime(ctx.push, tx, [{ kind: 'ReactionChanged', ...to, chatId, messageId, refId: changed }], now);
    }
    return replyOf(tx, me, messageId);
  });
}

/** The reaction's id when this adds it (new, or back after a removal); null when it was there already. */
async function addRow(tx: Db, me: string, messageId: string, emoji: string, now: Date): Promise<string | null> {
  const { rows: [live] } = await query<{ has: boolean; count: number }>(
    tx,
    sql`select bool_or(emoji = ${emoji}) as has, count(*)::int as count from messenger.message_reactions
         where message_id = ${messageId} and user_id = ${me} and removed_at is null`,
  );
  if (live?.has) return null;
  if ((live?.count ?? 0) >= REACTIONS_PER_USER_MAX) throw ChatErrors.reactionLimit(REACTIONS_PER_USER_MAX);
  const { rows: [row] } = await query<{ id: string }>(
    tx,
    // A reaction taken back and given again keeps its id (the RefId of its frames).
    sql`insert into messenger.message_reactions (message_id, user_id, emoji, id, created_at)
        values (${messageId}, ${me}, ${emoji}, ${newId()}, ${now.toISOString()})
        on conflict (message_id, user_id, emoji) do update set removed_at = null, created_at = excluded.created_at
        returning id`,
  );
  return row!.id;
}

/** The reaction's id when this takes it back; null when there was none. */
async function removeRow(tx: Db, me: string, messageId: string, emoji: string, now: Date): Promise<string | null> {
  const { rows: [row] } = await query<{ id: string }>(
    tx,
    sql`update messenger.message_reactions set removed_at = ${now.toISOString()}
         where message_id = ${messageId} and user_id = ${me} and emoji = ${emoji} and removed_at is null returning id`,
  );
  return row?.id ?? null;
}
