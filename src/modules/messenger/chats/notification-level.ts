import { sql } from 'drizzle-orm';
import type { Principal } from '../../../platform/http/index.ts';
import { query } from '../../../platform/db/index.ts';
import type { MessengerContext } from '../context.ts';
import { ChatErrors } from '../errors.ts';
import type { NotificationLevel } from '../model/chat-kinds.ts';
import { activeUserTransaction } from '../user-replica/replica-reads.ts';
import { getChat, type ChatView } from './chats.ts';

/**
 * A participant's notifications of one chat: 'all', 'mentions' or 'off', stored on their
 * own participation and carried by every MessagePostedKafkaEvent of the chat (MutedUserIds,
 * MentionsOnlyUserIds), which the notifications consumer honours. Nothing is pushed: the level
 * changes no one else's view and no frame of the chat, and the user's other devices read it with
 * the chat (getChat, the chat list) — a setting, not an event to follow live.
 */
export async function setNotificationLevel(ctx: MessengerContext, caller: Principal, chatId: string, level: NotificationLevel): Promise<ChatView> {
  const now = ctx.clock.now().toISOString();
  await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const { rows } = await query<{ id: string }>(
      tx,
      sql`update messenger.chat_participants set notification_level = ${level}, updated_at = ${now}
           where chat_id = ${chatId} and user_id = ${caller.userId} and status = 'Active' returning id`,
    );
    if (rows.length === 0) throw ChatErrors.chatNotFound();
  });
  return getChat(ctx.db, chatId, caller.userId);
}
