import { sql } from 'drizzle-orm';
import type { Principal } from '../../../platform/http/index.ts';
import { query } from '../../../platform/db/index.ts';
import type { MessengerContext } from '../context.ts';
import { ChatErrors } from '../errors.ts';
import type { NotificationLevel } from '../model/chat-kinds.ts';
import { eventNameOf } from '../model/push-kinds.ts';
import { activeUserTransaction } from '../user-replica/replica-reads.ts';
import { getChat, type ChatView } from './chats.ts';

/**
 * A participant's notifications of one chat: 'all', 'mentions' or 'off', stored on their
 * own participation and carried by every MessagePostedKafkaEvent of the chat (MutedUserIds,
 * MentionsOnlyUserIds), which the notifications consumer honours. A change is the user's own: it
 * changes no one else's view and no frame of the chat, so it is pushed to their own devices alone
 * (user:{UserId}, `notification_level_changed`, a carried frame of the realtime outbox written in
 * this transaction: never announced before it commits, nor lost after, and in the user's event
 * stream for a device that reconnects). Setting the level it already has changes and pushes nothing.
 */
export async function setNotificationLevel(ctx: MessengerContext, caller: Principal, chatId: string, level: NotificationLevel): Promise<ChatView> {
  const now = ctx.clock.now();
  const me = caller.userId;
  await activeUserTransaction(ctx.db, me, async (tx) => {
    const { rows: [p] } = await query<{ id: string }>(
      tx,
      sql`update messenger.chat_participants set notification_level = ${level}, updated_at = ${now.toISOString()}
           where chat_id = ${chatId} and user_id = ${me} and status = 'Active' and notification_level is distinct from ${level}
          returning id`,
    );
    if (p) {
      await ctx.push.userFrames(tx, [{ userId: me, event: eventNameOf('NotificationLevelChanged'), payload: { ChatId: chatId, Level: level } }], now);
      return;
    }
    const { rows: member } = await query(tx, sql`select 1 from messenger.chat_participants where chat_id = ${chatId} and user_id = ${me} and status = 'Active'`);
    if (member.length === 0) throw ChatErrors.chatNotFound();
  });
  return getChat(ctx.db, chatId, me);
}
