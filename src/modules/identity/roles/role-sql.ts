import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { Role, RoleStatus } from './roles.ts';

/** Raw SQL over identity.role_definitions and identity.role_permissions; one statement per function. */

const COLUMNS = sql.raw(`id, code, name, company_id as "companyId", status, version,
  created_at as "createdAt", updated_at as "updatedAt", archived_at as "archivedAt"`);

// Version is a bigint, which pg hands over as text.
type RoleRow = Omit<Role, 'version'> & { version: string };
const toRole = (r: RoleRow): Role => ({ ...r, status: r.status as RoleStatus, version: Number(r.version) });

/** The role, locked FOR UPDATE or FOR SHARE when asked (the first lock of every writer's order). */
export async function findRole(db: Db, id: string, lock?: 'update' | 'share'): Promise<Role | null> {
  const forLock = lock === 'update' ? sql` for update` : lock === 'share' ? sql` for share` : sql``;
  const { rows } = await query<RoleRow>(db, sql`select ${COLUMNS} from identity.role_definitions where id = ${id}${forLock}`);
  return rows[0] ? toRole(rows[0]) : null;
}

/** The role's permission codes, sorted. */
export async function permissionsOf(db: Db, roleId: string): Promise<string[]> {
  const { rows } = await query<{ code: string }>(
    db,
    sql`select permission_code as code from identity.role_permissions where role_id = ${roleId} order by permission_code`,
  );
  return rows.map((r) => r.code);
}

export async function insertRole(tx: Db, r: Role): Promise<void> {
  await query(
    tx,
    sql`insert into identity.role_definitions (id, code, name, company_id, status, version, created_at, updated_at, archived_at)
        values (${r.id}, ${r.code}, ${r.name}, ${r.companyId}, ${r.status}, ${r.version}, ${r.createdAt}, ${r.updatedAt}, ${r.archivedAt})`,
  );
}

/** Grants the codes to the role, in one statement. */
export async function insertPermissions(tx: Db, roleId: string, codes: readonly string[], now: Date): Promise<void> {
  if (codes.length === 0) return;
  await query(
    tx,
    sql`insert into identity.role_permissions (role_id, permission_code, granted_at)
        select ${roleId}, code, ${now} from unnest(${sql.param(codes)}::text[]) as code`,
  );
}

export async function deletePermissions(tx: Db, roleId: string, codes: readonly string[]): Promise<void> {
  if (codes.length === 0) return;
  await query(
    tx,
    sql`delete from identity.role_permissions where role_id = ${roleId} and permission_code = any(${sql.param(codes)}::text[])`,
  );
}

/** A permission change: the role's new Version. */
export async function setRoleVersion(tx: Db, roleId: string, version: number, now: Date): Promise<void> {
  await query(tx, sql`update identity.role_definitions set version = ${version}, updated_at = ${now} where id = ${roleId}`);
}

export async function markRoleArchived(tx: Db, roleId: string, version: number, now: Date): Promise<void> {
  await query(
    tx,
    sql`update identity.role_definitions set status = 'Archived', version = ${version}, archived_at = ${now}, updated_at = ${now}
         where id = ${roleId}`,
  );
}
