import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { ScopeType } from '../../../contracts/identity-events.ts';
import type { AssignmentView, UserAccessSnapshot } from './assignments.ts';

/**
 * Raw SQL over role assignments: the access snapshot, a role's unique active users, and the
 * set-based status changes. "Active" everywhere means status Active and not past ExpiresAt.
 */

/** Smallest UUID: the keyset cursor before the first user. */
const FIRST_UUID = '00000000-0000-0000-0000-000000000000';

const uuids = (ids: readonly string[]) => sql`${sql.param(ids)}::uuid[]`;

interface SnapshotRow {
  userId: string;
  companyId: string | null;
  assignmentId: string | null;
  roleId: string;
  roleCode: string;
  scopeType: ScopeType;
  scopeOrganizationId: string | null;
  scopeProjectGroupId: string | null;
  scopeProjectId: string | null;
  expiresAt: Date | null;
}

/**
 * Each user's full snapshot — every active assignment with its RoleCode — in ONE query for the
 * whole page (no N+1). Returned in the order of `userIds`; unknown ids are left out.
 */
export async function loadAccessSnapshots(q: Db, userIds: readonly string[], now: Date): Promise<UserAccessSnapshot[]> {
  if (userIds.length === 0) return [];
  // LATERAL with OFFSET 0 (kept from being flattened into a join): one index probe per user on
  // ix_role_assignments_user_active. A plain join lets the planner hash-join the WHOLE assignments
  // table for every page (seq scan; measured 50–150 ms per page at 200k assignments, growing with them).
  const { rows } = await query<SnapshotRow>(q, sql`
    select u.id as "userId", u.company_id as "companyId", a.*
      from identity.users u
      left join lateral (
        select ra.id as "assignmentId", ra.role_id as "roleId", rd.code as "roleCode", ra.scope_type as "scopeType",
               ra.scope_organization_id as "scopeOrganizationId", ra.scope_project_group_id as "scopeProjectGroupId",
               ra.scope_project_id as "scopeProjectId", ra.expires_at as "expiresAt"
          from identity.role_assignments ra
          join identity.role_definitions rd on rd.id = ra.role_id
         where ra.user_id = u.id and ra.status = 'Active' and (ra.expires_at is null or ra.expires_at > ${now})
        offset 0
      ) a on true
     where u.id = any(${uuids(userIds)})
     order by u.id, a."assignmentId"`);
  const byUser = new Map<string, UserAccessSnapshot>();
  for (const r of rows) {
    let snap = byUser.get(r.userId);
    if (!snap) byUser.set(r.userId, (snap = { userId: r.userId, companyId: r.companyId, activeAssignments: [] }));
    if (r.assignmentId === null) continue;
    const view: AssignmentView = {
      assignmentId: r.assignmentId,
      roleId: r.roleId,
      roleCode: r.roleCode,
      scopeType: r.scopeType,
      scopeOrganizationId: r.scopeOrganizationId,
      scopeProjectGroupId: r.scopeProjectGroupId,
      scopeProjectId: r.scopeProjectId,
      expiresAt: r.expiresAt,
    };
    snap.activeAssignments.push(view);
  }
  return userIds.flatMap((id) => byUser.get(id) ?? []);
}

/**
 * The next keyset page of a role's unique active users after `cursor`, by UserId. With `lockUsers`
 * the page's user rows are locked FOR SHARE, in id order, until the caller commits: a grant,
 * revoke or expiry of one of them (FOR UPDATE on the user) either committed before — and the
 * snapshots read after this statement show it — or waits for the page, so its event is written
 * after the page's (per-user events in commit order; see access-events.ts). SHARE, so fan-outs of different
 * roles over the same users do not wait for each other.
 */
export async function pageActiveUsersOfRole(
  q: Db,
  args: { roleId: string; after: string | null; upTo?: string | null; limit: number; now: Date; lockUsers?: boolean },
): Promise<string[]> {
  const page = sql`
    select distinct user_id
      from identity.role_assignments
     where role_id = ${args.roleId} and status = 'Active' and (expires_at is null or expires_at > ${args.now})
       and user_id > ${args.after ?? FIRST_UUID} and (${args.upTo ?? null}::uuid is null or user_id <= ${args.upTo ?? null}::uuid)
     order by user_id
     limit ${args.limit}`;
  const { rows } = await query<{ userId: string }>(
    q,
    args.lockUsers
      ? sql`select u.id as "userId" from identity.users u where u.id in (${page}) order by u.id for share of u`
      : sql`select user_id as "userId" from (${page}) p order by user_id`,
  );
  return rows.map((r) => r.userId);
}

/**
 * The range boundaries of a large role's split: every `size`-th unique active user after `after`
 * (by UserId), up to `limit` of them. One index scan over the role's assignments.
 */
export async function rangeBoundaries(q: Db, args: { roleId: string; after: string | null; size: number; now: Date; limit: number }): Promise<string[]> {
  const { rows } = await query<{ userId: string }>(q, sql`
    select user_id as "userId" from (
      select user_id, row_number() over (order by user_id) as n from (
        select distinct user_id from identity.role_assignments
         where role_id = ${args.roleId} and status = 'Active' and (expires_at is null or expires_at > ${args.now})
           and user_id > ${args.after ?? FIRST_UUID}) d) x
     where n % ${args.size} = 0
     order by user_id
     limit ${args.limit}`);
  return rows.map((r) => r.userId);
}

/** Unique active users of a role, counted up to `cap` (enough to compare with the inline threshold). */
export async function countActiveUsersOfRole(q: Db, roleId: string, now: Date, cap: number): Promise<number> {
  const { rows } = await query<{ n: number }>(q, sql`
    select count(*)::int as n from (
      select distinct user_id from identity.role_assignments
       where role_id = ${roleId} and status = 'Active' and (expires_at is null or expires_at > ${now})
       limit ${cap}) x`);
  return rows[0]?.n ?? 0;
}

/** Highest RoleAssignment.Version among all of a user's assignments (null when none). */
export async function maxAssignmentVersion(q: Db, userId: string): Promise<number | null> {
  const { rows } = await query<{ max: string | null }>(
    q,
    sql`select max(version)::text as max from identity.role_assignments where user_id = ${userId}`,
  );
  return rows[0]?.max == null ? null : Number(rows[0].max);
}

export interface UserVersion {
  userId: string;
  /** The user's new max(RoleAssignment.Version). */
  version: number;
}

/**
 * Revokes every active assignment of a role (archiving a role ends what it grants, INV-R5). Users
 * are locked in id order first (the same order grants and revokes take), then each revoked
 * assignment gets its user's max version + 1.
 */
export async function revokeAllAssignmentsOfRole(tx: Db, roleId: string, now: Date): Promise<UserVersion[]> {
  const { rows } = await query<{ userId: string; version: string }>(tx, sql`
    with locked as (
      select u.id from identity.users u
       where u.id in (select user_id from identity.role_assignments where role_id = ${roleId} and status = 'Active')
       order by u.id
       for update of u
    ), maxes as (
      -- A correlated probe per user (ix_role_assignments_user_id), not a join over every assignment.
      select l.id as user_id, (select max(version) from identity.role_assignments where user_id = l.id) as max_version
        from locked l
    )
    update identity.role_assignments ra
       set status = 'Revoked', revoked_at = ${now}, updated_at = ${now}, version = m.max_version + 1
      from maxes m
     where ra.user_id = m.user_id and ra.role_id = ${roleId} and ra.status = 'Active'
    returning ra.user_id as "userId", ra.version::text as version`);
  return uniqueUserVersions(rows);
}

/**
 * Users with due assignments (Active, ExpiresAt ≤ now), read without locks: the rows a failed
 * expiry batch is redone for one at a time. Users in `exclude` are left out.
 */
export async function usersWithDueAssignments(q: Db, now: Date, limit: number, exclude: readonly string[] = []): Promise<string[]> {
  const { rows } = await query<{ userId: string }>(q, sql`
    select distinct user_id as "userId" from identity.role_assignments
     where status = 'Active' and expires_at <= ${now} and not (user_id = any(${uuids(exclude)}))
     order by user_id
     limit ${limit}`);
  return rows.map((r) => r.userId);
}

/**
 * Marks as Expired the due assignments (Active, ExpiresAt ≤ now) of up to `limit` users — or of
 * `userId` alone — skipping users another transaction holds (they are picked up on the next run)
 * and users in `exclude`. Returns the users touched with their new max(RoleAssignment.Version).
 */
export async function expireDueAssignments(
  tx: Db,
  e: { now: Date; limit: number; exclude?: readonly string[]; userId?: string },
): Promise<UserVersion[]> {
  const { now } = e;
  const { rows } = await query<{ userId: string; version: string }>(tx, sql`
    with due as (
      select distinct user_id from identity.role_assignments
       where status = 'Active' and expires_at <= ${now}
         and (${e.userId ?? null}::uuid is null or user_id = ${e.userId ?? null})
         and not (user_id = any(${uuids(e.exclude ?? [])}))
       order by user_id
       limit ${e.limit}
    ), locked as (
      select u.id from identity.users u join due d on d.user_id = u.id
       order by u.id
       for update of u skip locked
    ), maxes as (
      -- A correlated probe per user (ix_role_assignments_user_id), not a join over every assignment.
      select l.id as user_id, (select max(version) from identity.role_assignments where user_id = l.id) as max_version
        from locked l
    )
    update identity.role_assignments ra
       set status = 'Expired', expired_at = ${now}, updated_at = ${now}, version = m.max_version + 1
      from maxes m
     where ra.user_id = m.user_id and ra.status = 'Active' and ra.expires_at <= ${now}
    returning ra.user_id as "userId", ra.version::text as version`);
  return uniqueUserVersions(rows);
}

function uniqueUserVersions(rows: readonly { userId: string; version: string }[]): UserVersion[] {
  const byUser = new Map<string, number>();
  for (const r of rows) byUser.set(r.userId, Math.max(byUser.get(r.userId) ?? 0, Number(r.version)));
  return [...byUser].map(([userId, version]) => ({ userId, version })).sort((a, b) => (a.userId < b.userId ? -1 : 1));
}
