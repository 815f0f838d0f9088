import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { ChatErrors } from '../errors.ts';

/**
 * Reads of the user replica for the rest of the messenger (contact requests, chat participants,
 * display names): local read-only state, never a call to identity (seed 002 "Provides").
 */

export interface MessengerUser {
  id: string;
  firstName: string;
  middleName: string | null;
  lastName: string;
  phoneNumber: string | null;
  isActive: boolean;
  identityUserVersion: number;
}

/** Display names ("First Last") of the users the replica knows among `ids` (the ops console's audit actors). */
export async function displayNamesOf(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await query<{ id: string; name: string }>(
    db,
    sql`select id, concat_ws(' ', first_name, last_name) as name from messenger.users where id = any(${sql.param(ids)}::uuid[])`,
  );
  return new Map(rows.map((r) => [r.id, r.name]));
}

export async function findMessengerUser(db: Db, userId: string): Promise<MessengerUser | null> {
  const { rows } = await query<Omit<MessengerUser, 'identityUserVersion'> & { identityUserVersion: string }>(
    db,
    sql`select id, first_name as "firstName", middle_name as "middleName", last_name as "lastName",
            phone_number as "phoneNumber", is_active as "isActive", identity_user_version as "identityUserVersion"
       from messenger.users where id = ${userId}`,
  );
  const r = rows[0];
  return r ? { ...r, identityUserVersion: Number(r.identityUserVersion) } : null;
}

/** The replica's IsActive for a user; undefined when the replica has no row for it. */
export async function replicaActivity(db: Db, userId: string): Promise<boolean | undefined> {
  const { rows } = await query<{ isActive: boolean }>(db, sql`select is_active as "isActive" from messenger.users where id = ${userId}`);
  return rows[0]?.isActive;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Those of `userIds` whose replica row is inactive (the hub's periodic access recheck). */
export async function inactiveAmong(db: Db, userIds: readonly string[]): Promise<string[]> {
  const ids = userIds.filter((u) => UUID.test(u));
  if (ids.length === 0) return [];
  const { rows } = await query<{ id: string }>(
    db,
    sql`select id from messenger.users where id = any(${sql.param(ids)}::uuid[]) and not is_active`,
  );
  return rows.map((r) => r.id);
}

/**
 * Every authenticated messenger route, reads too: a user whose replica row exists and is inactive
 * (Blocked, Archived, an unknown status) is refused with MSG_USER_INACTIVE. A user the replica has
 * not seen yet passes (seed 002's consistency window); the writes that need an addressable caller
 * refuse it on their own (requireActiveCaller).
 */
export async function refuseInactiveUser(db: Db, userId: string): Promise<void> {
  if ((await replicaActivity(db, userId)) === false) throw ChatErrors.callerInactive();
}

/**
 * The same refusal inside a write's transaction, so a deactivation racing the write cannot slip
 * through: FOR SHARE conflicts with the replica consumer's UPDATE of the row, so either the
 * deactivation waits for this write's commit, or this read waits for the deactivation and sees it.
 */
export async function lockActiveUser(tx: Db, userId: string): Promise<void> {
  const { rows } = await query<{ isActive: boolean }>(tx, sql`select is_active as "isActive" from messenger.users where id = ${userId} for share`);
  if (rows[0]?.isActive === false) throw ChatErrors.callerInactive();
}

/** A write transaction of `userId`'s request: its first statement is lockActiveUser. */
export function activeUserTransaction<T>(db: Db, userId: string, write: (tx: Db) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await lockActiveUser(tx, userId);
    return write(tx);
  });
}

/**
 * The caller of a write (send, new chat, contact request, call): fail closed — a Blocked,
 * Archived or unknown-status user (IsActive false) is refused with MSG_USER_INACTIVE, a user the
 * replica has not seen with MSG_USER_NOT_REPLICATED (it is not blocked: it may try again later).
 */
export async function requireActiveCaller(db: Db, userId: string): Promise<void> {
  const active = await replicaActivity(db, userId);
  if (active !== true) throw callerRefusal(active);
}

/** Why a caller that is not active is refused: unseen (undefined) or inactive (false). */
export const callerRefusal = (active: boolean | undefined) => (active === undefined ? ChatErrors.callerUnknown() : ChatErrors.callerInactive());

/**
 * A user named by id (a callee): it must be in the replica and active (IsActive, fail-closed for
 * Blocked/Archived/unknown). Until the replica has a just-registered user, it is not found either
 * (MSG_USER_NOT_FOUND): an accepted race that converges on delivery.
 */
export async function requireAddressableUser(db: Db, userId: string): Promise<MessengerUser> {
  const user = await findMessengerUser(db, userId);
  if (!user || !user.isActive) throw ChatErrors.userNotFound(userId);
  return user;
}
