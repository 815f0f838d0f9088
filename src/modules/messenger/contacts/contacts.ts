import { sql } from 'drizzle-orm';
import { newId } from '../../../platform/time.ts';
import { query, type Db } from '../../../platform/db/index.ts';
import { isoOf } from '../sql-rows.ts';
import type { ContactRelationLookup } from '../contact-search/search.ts';
import { blocksAmong } from '../model/blacklist-reads.ts';
import type { MessengerContext } from '../context.ts';
import { ChatErrors, ContactErrors, MessengerErrors } from '../errors.ts';
import type { ContactStatus } from '../model/contact-kinds.ts';
import { enqueueRealtime } from '../model/push-rows.ts';
import { toE164 } from '../user-replica/rules.ts';
import { activeUserTransaction, requireActiveCaller } from '../user-replica/replica-reads.ts';

/**
 * Contacts (contact.md): a request by phone (the addressee resolved in the user replica), accept,
 * remove (which also declines or withdraws a request). One row per pair of users; a removed pair
 * can be requested again. Each change pushes to the other party's user:{UserId}.
 */

export interface ContactView {
  id: string;
  /** The other party. */
  userId: string;
  status: Exclude<ContactStatus, 'Removed'>;
  direction: 'Outgoing' | 'Incoming';
  createdAt: string;
  acceptedAt: string | null;
}

interface ContactRow {
  id: string;
  requesterUserId: string;
  addresseeUserId: string;
  status: ContactStatus;
  createdAt: Date;
  acceptedAt: Date | null;
}

const COLUMNS = sql.raw(`id, requester_user_id as "requesterUserId", addressee_user_id as "addresseeUserId", status,
  created_at as "createdAt", accepted_at as "acceptedAt"`);

const viewFor = (me: string, c: ContactRow): ContactView => ({
  id: c.id,
  userId: c.requesterUserId === me ? c.addresseeUserId : c.requesterUserId,
  status: c.status as ContactView['status'],
  direction: c.requesterUserId === me ? 'Outgoing' : 'Incoming',
  createdAt: isoOf(c.createdAt)!,
  acceptedAt: isoOf(c.acceptedAt),
});

/** The active replica user holding this E.164 phone (the replica is the messenger's local source for users). */
async function activeUserByPhone(q: Db, phone: string): Promise<string | undefined> {
  const { rows } = await query<{ id: string }>(q, sql`select id from messenger.users where phone_number = ${phone} and is_active`);
  return rows[0]?.id;
}

export async function requestContact(ctx: MessengerContext, me: string, phoneInput: string): Promise<ContactView> {
  await requireActiveCaller(ctx.db, me);
  const phone = toE164(phoneInput.trim(), ctx.options.phoneRegion);
  if (!phone) throw MessengerErrors.invalidPhone();
  const other = await activeUserByPhone(ctx.db, phone);
  if (!other) throw MessengerErrors.contactUserNotFound();
  if (other === me) throw ContactErrors.self();
  // One who blocked the caller is not addressable to them, as search does not find them (the
  // blocked are never told); the caller's own block is theirs to know.
  const { blockedByMe, blockingMe } = await blocksAmong(ctx.db, me, [other]);
  if (blockingMe.has(other)) throw MessengerErrors.contactUserNotFound();
  if (blockedByMe.has(other)) throw ChatErrors.blocked();
  const now = ctx.clock.now();
  return activeUserTransaction(ctx.db, me, async (tx) => {
    // A removed pair is requested again on the same row; a live one is a conflict.
    const { rows: [row] } = await query<ContactRow>(
      tx,
      sql`insert into messenger.contacts (id, requester_user_id, addressee_user_id, status, created_at, updated_at)
          values (${newId()}, ${me}, ${other}, 'Pending', ${now.toISOString()}, ${now.toISOString()})
          on conflict (least(requester_user_id, addressee_user_id), greatest(requester_user_id, addressee_user_id)) do update
            set requester_user_id = excluded.requester_user_id, addressee_user_id = excluded.addressee_user_id, status = 'Pending',
                removed_by_user_id = null, accepted_at = null, created_at = excluded.created_at, updated_at = excluded.updated_at
            where messenger.contacts.status = 'Removed'
          returning ${COLUMNS}`,
    );
    if (!row) throw ContactErrors.exists();
    await enqueueRealtime(ctx.push, tx, [{ kind: 'ContactRequestReceived', targetKind: 'User', targetUserId: other, refId: row.id }], now);
    return viewFor(me, row);
  });
}

async function lockContactOf(tx: Db, me: string, contactId: string): Promise<ContactRow> {
  const { rows: [row] } = await query<ContactRow>(
    tx,
    sql`select ${COLUMNS} from messenger.contacts where id = ${contactId} and ${me} in (requester_user_id, addressee_user_id)
          and status <> 'Removed' for update`,
  );
  if (!row) throw ContactErrors.notFound();
  return row;
}

export async function acceptContact(ctx: MessengerContext, me: string, contactId: string): Promise<ContactView> {
  const now = ctx.clock.now();
  return activeUserTransaction(ctx.db, me, async (tx) => {
    const c = await lockContactOf(tx, me, contactId);
    if (c.addresseeUserId !== me) throw ContactErrors.notAddressee();
    if (c.status !== 'Pending') throw ContactErrors.notPending();
    const [row] = (await query<ContactRow>(
      tx,
      sql`update messenger.contacts set status = 'Accepted', accepted_at = ${now.toISOString()}, updated_at = ${now.toISOString()}
           where id = ${contactId} returning ${COLUMNS}`,
    )).rows as [ContactRow];
    await enqueueRealtime(ctx.push, tx, [{ kind: 'ContactRequestAccepted', targetKind: 'User', targetUserId: c.requesterUserId, refId: c.id }], now);
    // Accepting the person answers their Direct chat's request too (docs/security.md, "Consent").
    await query(
      tx,
      sql`update messenger.chat_participants p set accepted_at = ${now.toISOString()}, updated_at = ${now.toISOString()}
            from messenger.chats ch
           where ch.direct_key = ${[c.requesterUserId, me].sort().join(':')} and p.chat_id = ch.id and p.user_id = ${me}
             and p.status = 'Active' and p.accepted_at is null`,
    );
    return viewFor(me, row);
  });
}

/** Removes a contact, declines an incoming request or withdraws an outgoing one. */
export async function removeContact(ctx: MessengerContext, me: string, contactId: string): Promise<void> {
  const now = ctx.clock.now();
  await activeUserTransaction(ctx.db, me, async (tx) => {
    const c = await lockContactOf(tx, me, contactId);
    await query(
      tx,
      sql`update messenger.contacts set status = 'Removed', removed_by_user_id = ${me}, updated_at = ${now.toISOString()} where id = ${contactId}`,
    );
    const other = c.requesterUserId === me ? c.addresseeUserId : c.requesterUserId;
    await enqueueRealtime(ctx.push, tx, [{ kind: 'ContactRemoved', targetKind: 'User', targetUserId: other, refId: c.id }], now);
    // Removing a contact takes back the consent it gave: their Direct chat is a message request to
    // the remover again (docs/security.md, "Consent"), so presence, typing and reads stop there too
    // until the remover writes in it or accepts it. Declining or withdrawing a request gave none.
    if (c.status === 'Accepted') {
      await query(
        tx,
        sql`update messenger.chat_participants p set accepted_at = null, updated_at = ${now.toISOString()}
              from messenger.chats ch
             where ch.direct_key = ${[me, other].sort().join(':')} and p.chat_id = ch.id and p.user_id = ${me}
               and p.status = 'Active' and p.accepted_at is not null`,
      );
    }
  });
}

export async function listContacts(q: Db, me: string): Promise<ContactView[]> {
  const { rows } = await query<ContactRow>(
    q,
    sql`select ${COLUMNS} from messenger.contacts where ${me} in (requester_user_id, addressee_user_id) and status <> 'Removed'
         order by created_at desc, id limit 5000`,
  );
  return rows.map((r) => viewFor(me, r));
}

/** The viewer's contact status with a user, for contact search: only 'Accepted' unmasks the last name (INV-MU-3); and whether the user blocks the viewer (then not found). */
export function contactRelationLookup(q: Db): ContactRelationLookup {
  return async (viewer, target) => {
    const { rows } = await query<{ status: string | null; blocksViewer: boolean }>(
      q,
      sql`select (select status from messenger.contacts
                   where least(requester_user_id, addressee_user_id) = least(${viewer}::uuid, ${target}::uuid)
                     and greatest(requester_user_id, addressee_user_id) = greatest(${viewer}::uuid, ${target}::uuid)
                     and status <> 'Removed') as status,
                 exists (select 1 from messenger.blacklist_entries
                          where owner_user_id = ${target}::uuid and blocked_user_id = ${viewer}::uuid and status = 'Blocked') as "blocksViewer"`,
    );
    return rows[0]!;
  };
}
