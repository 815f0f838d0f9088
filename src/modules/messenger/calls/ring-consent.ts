import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';

/**
 * Whether a 1:1 call may ring its callee (docs/security.md, "Consent"): a ring interrupts, so, as
 * a message from a stranger is a request, only those the callee consented to ring them — their
 * Accepted contact, or the other member of a Direct chat the callee accepted (they answered it,
 * wrote in it or opened it). Anyone else's call is a missed-call request: stored Missed at once and
 * announced to the callee as `call_missed`, never rung. A callee who blocks the caller is not even
 * told (`silent`): the caller sees what any unconsented call gives; a caller who blocks the callee
 * is refused (`blockedByCaller`), as their own block is theirs to know.
 */
export type RingConsent = 'ring' | 'request' | 'silent' | 'blockedByCaller';

/** One read: the block either way, the contact and the callee's acceptance of their Direct chat. */
export async function ringConsent(db: Db, caller: string, callee: string): Promise<RingConsent> {
  const { rows } = await query<{ blockedByCaller: boolean; blocksCaller: boolean; consented: boolean }>(
    db,
    sql`select exists (select 1 from messenger.blacklist_entries
                        where owner_user_id = ${caller} and blocked_user_id = ${callee} and status = 'Blocked') as "blockedByCaller",
               exists (select 1 from messenger.blacklist_entries
                        where owner_user_id = ${callee} and blocked_user_id = ${caller} and status = 'Blocked') as "blocksCaller",
               exists (select 1 from messenger.contacts
                        where least(requester_user_id, addressee_user_id) = least(${caller}::uuid, ${callee}::uuid)
                          and greatest(requester_user_id, addressee_user_id) = greatest(${caller}::uuid, ${callee}::uuid)
                          and status = 'Accepted')
               or exists (select 1 from messenger.chats ch
                            join messenger.chat_participants p on p.chat_id = ch.id and p.user_id = ${callee} and p.status = 'Active'
                           where ch.direct_key = ${[caller, callee].sort().join(':')} and p.accepted_at is not null) as consented`,
  );
  const r = rows[0]!;
  if (r.blockedByCaller) return 'blockedByCaller';
  if (r.blocksCaller) return 'silent';
  return r.consented ? 'ring' : 'request';
}
