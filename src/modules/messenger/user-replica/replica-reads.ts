import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { MessengerErrors } from '../errors.ts';

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

/**
 * The addressee of a contact request or message: it must be in the replica and active (IsActive,
 * fail-closed for Blocked/Archived/unknown). Until the replica has a just-registered user, it is
 * not found either (MSG_CONTACT_USER_NOT_FOUND): an accepted race that converges on delivery.
 */
export async function requireAddressableUser(db: Db, userId: string): Promise<MessengerUser> {
  const user = await findMessengerUser(db, userId);
  if (!user || !user.isActive) throw MessengerErrors.contactUserNotFound();
  return user;
}
