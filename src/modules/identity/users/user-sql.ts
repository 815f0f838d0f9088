import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { UserStatus, UserType } from '../../../contracts/identity-events.ts';
import type { User } from './users.ts';

/** Raw SQL over identity.users; each function is one statement on the handle given. */

const COLUMNS = sql.raw(`id, first_name as "firstName", middle_name as "middleName", last_name as "lastName",
  phone_number as "phoneNumber", status, type, company_id as "companyId", version, created_at as "createdAt", updated_at as "updatedAt"`);

// Version is a bigint, which pg hands over as text.
type UserRow = Omit<User, 'version'> & { version: string };
const toUser = (r: UserRow): User => ({ ...r, status: r.status as UserStatus, type: r.type as UserType, version: Number(r.version) });

/** The user, locked FOR UPDATE when asked (every writer of a user's events takes that lock first). */
export async function findUser(db: Db, id: string, opts: { forUpdate?: boolean } = {}): Promise<User | null> {
  const lock = opts.forUpdate ? sql` for update` : sql``;
  const { rows } = await query<UserRow>(db, sql`select ${COLUMNS} from identity.users where id = ${id}${lock}`);
  return rows[0] ? toUser(rows[0]) : null;
}

export async function insertUser(tx: Db, u: User): Promise<void> {
  await query(
    tx,
    sql`insert into identity.users (id, first_name, middle_name, last_name, phone_number, status, type, company_id, version, created_at, updated_at)
        values (${u.id}, ${u.firstName}, ${u.middleName}, ${u.lastName}, ${u.phoneNumber}, ${u.status}, ${u.type}, ${u.companyId},
                ${u.version}, ${u.createdAt}, ${u.updatedAt})`,
  );
}

/** Writes the patched fields (name, phone, status) with the new Version. */
export async function updateUser(tx: Db, u: User): Promise<void> {
  await query(
    tx,
    sql`update identity.users
           set first_name = ${u.firstName}, middle_name = ${u.middleName}, last_name = ${u.lastName}, phone_number = ${u.phoneNumber},
               status = ${u.status}, version = ${u.version}, updated_at = ${u.updatedAt}
         where id = ${u.id}`,
  );
}
