import { sql } from 'drizzle-orm';
import { newId } from '../../../platform/time.ts';
import { query, type Db } from '../../../platform/db/index.ts';
import { isoOf } from '../sql-rows.ts';
import type { MessengerContext } from '../context.ts';
import { ContactErrors } from '../errors.ts';
import { enqueueRealtime } from '../model/push-rows.ts';
import { activeUserTransaction } from '../user-replica/replica-reads.ts';

/**
 * Blacklist (blacklist.md, UC-MSG-004): a blocked user cannot message you in a direct chat or call
 * you, and you cannot either while you block them. BlacklistChanged goes to the owner's own
 * user:{UserId} group (their other devices); the blocked user is never told.
 */

export interface BlacklistEntryView {
  id: string;
  blockedUserId: string;
  status: 'Blocked' | 'Unblocked';
  updatedAt: string;
}

/** Blocks or unblocks; a call that changes nothing writes nothing and pushes nothing. */
export async function setBlocked(ctx: MessengerContext, ownerUserId: string, blockedUserId: string, blocked: boolean): Promise<BlacklistEntryView> {
  const target = blockedUserId.toLowerCase();
  if (target === ownerUserId) throw ContactErrors.blockSelf();
  const status = blocked ? 'Blocked' : 'Unblocked';
  const now = ctx.clock.now();
  return activeUserTransaction(ctx.db, ownerUserId, async (tx) => {
    const { rows: [previous] } = await query<{ status: string }>(
      tx,
      sql`select status from messenger.blacklist_entries where owner_user_id = ${ownerUserId} and blocked_user_id = ${target} for update`,
    );
    const changed = (previous?.status ?? 'Unblocked') !== status;
    const { rows } = await query<{ id: string; status: 'Blocked' | 'Unblocked'; updatedAt: Date }>(
      tx,
      sql`insert into messenger.blacklist_entries (id, owner_user_id, blocked_user_id, status, created_at, updated_at)
          values (${newId()}, ${ownerUserId}, ${target}, ${status}, ${now.toISOString()}, ${now.toISOString()})
          on conflict (owner_user_id, blocked_user_id) do update
            set status = excluded.status,
                updated_at = case when messenger.blacklist_entries.status = excluded.status then messenger.blacklist_entries.updated_at else excluded.updated_at end
          returning id, status, updated_at as "updatedAt"`,
    );
    const row = rows[0]!;
    if (changed) await enqueueRealtime(ctx.push, tx, [{ kind: 'BlacklistChanged', targetKind: 'User', targetUserId: ownerUserId, refId: row.id }], now);
    return { id: row.id, blockedUserId: target, status: row.status, updatedAt: isoOf(row.updatedAt)! };
  });
}

export async function listBlocked(q: Db, ownerUserId: string): Promise<BlacklistEntryView[]> {
  const { rows } = await query<{ id: string; blockedUserId: string; updatedAt: Date }>(
    q,
    sql`select id, blocked_user_id as "blockedUserId", updated_at as "updatedAt" from messenger.blacklist_entries
         where owner_user_id = ${ownerUserId} and status = 'Blocked' order by updated_at desc, id limit 1000`,
  );
  return rows.map((r) => ({ id: r.id, blockedUserId: r.blockedUserId, status: 'Blocked', updatedAt: isoOf(r.updatedAt)! }));
}
