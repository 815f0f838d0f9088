import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { ScopeType } from '../../../contracts/identity-events.ts';
import type { Assignment, AssignmentStatus, Scope } from './assignments.ts';

/** Raw SQL over single role assignments (grant, revoke, read); the set-based changes are in access-sql.ts. */

const COLUMNS = sql.raw(`id, role_id as "roleId", user_id as "userId", scope_type as "scopeType",
  scope_organization_id as "scopeOrganizationId", scope_project_group_id as "scopeProjectGroupId", scope_project_id as "scopeProjectId",
  status, expires_at as "expiresAt", version, granted_at as "grantedAt", revoked_at as "revokedAt", expired_at as "expiredAt",
  updated_at as "updatedAt"`);

// Version is a bigint, which pg hands over as text.
type AssignmentRow = Omit<Assignment, 'version'> & { version: string };
const toAssignment = (r: AssignmentRow): Assignment => ({
  ...r,
  scopeType: r.scopeType as ScopeType,
  status: r.status as AssignmentStatus,
  version: Number(r.version),
});

export async function findAssignment(db: Db, id: string, forUpdate = false): Promise<Assignment | null> {
  const lock = forUpdate ? sql` for update` : sql``;
  const { rows } = await query<AssignmentRow>(db, sql`select ${COLUMNS} from identity.role_assignments where id = ${id}${lock}`);
  return rows[0] ? toAssignment(rows[0]) : null;
}

/**
 * Marks Expired the user's active grant of the role in the same scope that is already past its
 * ExpiresAt (the expiry worker may not have reached it yet), so it does not block a new grant.
 */
export async function expireDueSameScopeGrant(
  tx: Db,
  g: { roleId: string; userId: string; scope: Scope; now: Date; version: number },
): Promise<void> {
  const { scope, now } = g;
  await query(
    tx,
    sql`update identity.role_assignments
           set status = 'Expired', expired_at = ${now}, updated_at = ${now}, version = ${g.version}
         where role_id = ${g.roleId} and user_id = ${g.userId} and scope_type = ${scope.scopeType}
           and coalesce(scope_organization_id, scope_project_group_id, scope_project_id, '00000000-0000-0000-0000-000000000000'::uuid)
             = coalesce(${scope.scopeOrganizationId}::uuid, ${scope.scopeProjectGroupId}::uuid, ${scope.scopeProjectId}::uuid,
                        '00000000-0000-0000-0000-000000000000'::uuid)
           and status = 'Active' and expires_at <= ${now}`,
  );
}

export async function insertAssignment(tx: Db, a: Assignment): Promise<void> {
  await query(
    tx,
    sql`insert into identity.role_assignments
          (id, role_id, user_id, scope_type, scope_organization_id, scope_project_group_id, scope_project_id,
           status, expires_at, version, granted_at, revoked_at, expired_at, updated_at)
        values (${a.id}, ${a.roleId}, ${a.userId}, ${a.scopeType}, ${a.scopeOrganizationId}, ${a.scopeProjectGroupId}, ${a.scopeProjectId},
                ${a.status}, ${a.expiresAt}, ${a.version}, ${a.grantedAt}, ${a.revokedAt}, ${a.expiredAt}, ${a.updatedAt})`,
  );
}

export async function markAssignmentRevoked(tx: Db, id: string, version: number, now: Date): Promise<void> {
  await query(
    tx,
    sql`update identity.role_assignments set status = 'Revoked', revoked_at = ${now}, updated_at = ${now}, version = ${version}
         where id = ${id}`,
  );
}
