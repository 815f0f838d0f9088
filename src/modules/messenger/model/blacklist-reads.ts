import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';

/**
 * The blacklist's reads (blacklist.md, UC-MSG-004), on the bottom floor because chats and calls ask
 * them too: a blocked user cannot message you in a direct chat or call you, and you cannot either
 * while you block them. The writes (block, unblock, the list) stay with the contacts.
 */

/** The users `me` blocks or is blocked by: one read for a whole page of chats. */
export async function blockedWith(q: Db, me: string): Promise<Set<string>> {
  const { rows } = await query<{ id: string }>(
    q,
    sql`select blocked_user_id as id from messenger.blacklist_entries where owner_user_id = ${me} and status = 'Blocked'
        union select owner_user_id from messenger.blacklist_entries where blocked_user_id = ${me} and status = 'Blocked'`,
  );
  return new Set(rows.map((r) => r.id));
}

/** Among `userIds`: those `me` blocks, and those who block `me` (one read for a whole invite). */
export async function blocksAmong(q: Db, me: string, userIds: readonly string[]): Promise<{ blockedByMe: Set<string>; blockingMe: Set<string> }> {
  if (userIds.length === 0) return { blockedByMe: new Set(), blockingMe: new Set() };
  const { rows } = await query<{ id: string; mine: boolean }>(
    q,
    sql`select blocked_user_id as id, true as mine from messenger.blacklist_entries
         where owner_user_id = ${me} and status = 'Blocked' and blocked_user_id = any(${sql.param([...userIds])}::uuid[])
        union all
        select owner_user_id, false from messenger.blacklist_entries
         where blocked_user_id = ${me} and status = 'Blocked' and owner_user_id = any(${sql.param([...userIds])}::uuid[])`,
  );
  return { blockedByMe: new Set(rows.filter((r) => r.mine).map((r) => r.id)), blockingMe: new Set(rows.filter((r) => !r.mine).map((r) => r.id)) };
}
