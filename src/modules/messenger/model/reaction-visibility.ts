import { sql, type SQL } from 'drizzle-orm';

/**
 * Whose reactions a viewer counts (docs/security.md, "Consent"), on the bottom floor because history
 * (messages/reactions.ts) and the reaction frames (realtime-dispatch/refs.ts) count alike. As read
 * receipts: a user's reactions are shared only once the chat is accepted by them, and never across a
 * block in a Direct chat, either way round — judged when read, so accepting shares them and a block
 * takes them back at once. Your own always count for you.
 */

/**
 * True when the reaction of `reactor` in `chatId` counts for `viewer`. `viewer` null: as the chat
 * sees it (a reaction_changed frame to chat:{ChatId}, written only when no block stood between its
 * two members) — shared reactions only.
 */
export const reactionCountsFor = (viewer: SQL, reactor: SQL, chatId: SQL): SQL => sql`(${reactor} = ${viewer}::uuid or (
    exists (select 1 from messenger.chat_participants rp where rp.chat_id = ${chatId} and rp.user_id = ${reactor} and rp.accepted_at is not null)
    and not exists (select 1 from messenger.chats rc join messenger.blacklist_entries rb on rb.status = 'Blocked'
                      and ((rb.owner_user_id = ${viewer}::uuid and rb.blocked_user_id = ${reactor}) or (rb.owner_user_id = ${reactor} and rb.blocked_user_id = ${viewer}::uuid))
                     where rc.id = ${chatId} and rc.kind = 'Direct')))`;

/**
 * True when what `me` does in `chatId` (a read receipt, a reaction) stays on their own devices: the
 * chat is a message request to them (`participant`'s accepted_at null), or in a Direct chat either
 * side blocks the other (docs/security.md, "Consent"). `participant` is the alias of me's row of
 * messenger.chat_participants in the surrounding statement.
 */
export function ownDevicesOnly(me: string, chatId: string, participant: string): SQL {
  return sql`(${sql.raw(participant)}.accepted_at is null or exists (
             select 1 from messenger.chats c
               join messenger.chat_participants o on o.chat_id = c.id and o.user_id <> ${me} and o.status = 'Active'
               join messenger.blacklist_entries b on b.status = 'Blocked'
                 and ((b.owner_user_id = ${me} and b.blocked_user_id = o.user_id) or (b.owner_user_id = o.user_id and b.blocked_user_id = ${me}))
              where c.id = ${chatId} and c.kind = 'Direct'))`;
}
