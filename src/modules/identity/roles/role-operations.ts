import type { Db } from '../../../platform/db/index.ts';
import { enqueueAccessEvents } from '../assignments/access-events.ts';
import { newId } from '../../../platform/time.ts';
import { countActiveUsersOfRole, loadAccessSnapshots, pageActiveUsersOfRole, revokeAllAssignmentsOfRole } from '../assignments/access-sql.ts';
import { accessChangedEvent } from '../assignments/assignments.ts';
import type { IdentityContext } from '../context.ts';
import { IdentityErrors, isUniqueViolation } from '../errors.ts';
import { insertFanOutTask } from '../access-fanout/fanout-sql.ts';
import { deletePermissions, findRole, insertPermissions, insertRole, markRoleArchived, permissionsOf, setRoleVersion } from './role-sql.ts';
import { chooseFanOut, ensureRoleActive, normalizePermissions, samePermissions, type Role } from './roles.ts';
import { IDENTITY_DEFAULTS } from '../defaults.ts';

/** RoleDefinition operations: create, set-role-permissions (inline or queued fan-out), archive (an archived role keeps no active assignment: they are revoked, INV-R5). */

export interface RoleWithPermissions extends Role {
  permissions: string[];
}

export interface FanOutOutcome {
  /** none: the permission set did not change; inline: events written in the operation; queued: a task. */
  mode: 'none' | 'inline' | 'queued';
  /** Unique active users announced inline (inline), or counted past the threshold (queued: threshold + 1). */
  users: number;
  taskId: string | null;
}

const ROLE_CODE_UNIQUE = 'ux_role_definitions_company_code';

/** Locks (share or update) and returns the role; 404 when it does not exist. */
export async function requireRole(q: Db, id: string, lock?: 'update' | 'share'): Promise<Role> {
  const role = await findRole(q, id, lock);
  if (!role) throw IdentityErrors.roleNotFound(id);
  return role;
}

export async function getRole(ctx: IdentityContext, id: string): Promise<RoleWithPermissions> {
  const role = await requireRole(ctx.db, id);
  return { ...role, permissions: await permissionsOf(ctx.db, id) };
}

export async function createRole(
  ctx: IdentityContext,
  input: { code: string; name: string; companyId?: string | null; permissions: string[] },
): Promise<RoleWithPermissions> {
  const permissions = normalizePermissions(input.permissions);
  const now = ctx.clock.now();
  const role: Role = {
    id: newId(),
    code: input.code.trim(),
    name: input.name.trim(),
    companyId: input.companyId ?? null,
    status: 'Active',
    version: 1,
    createdAt: now,
    updatedAt: now,
    archivedAt: null,
  };
  try {
    await ctx.db.transaction(async (tx) => {
      await insertRole(tx, role);
      await insertPermissions(tx, role.id, permissions, now);
    });
  } catch (err) {
    if (isUniqueViolation(err, ROLE_CODE_UNIQUE)) throw IdentityErrors.roleCodeTaken(role.code);
    throw err;
  }
  ctx.log.info({ roleId: role.id, code: role.code, companyId: role.companyId, permissions: permissions.length }, 'role created');
  return { ...role, permissions };
}

/**
 * set-role-permissions: replaces the set and bumps RoleDefinition.Version. A role with at most
 * InlineFanOutThreshold unique active users gets a UserAccessChanged per user in this transaction
 * (Version = the new role version); a bigger one gets one AccessFanOutTask carrying that version.
 */
export async function setRolePermissions(
  ctx: IdentityContext,
  roleId: string,
  codes: readonly string[],
  correlationId?: string,
): Promise<{ role: RoleWithPermissions; fanOut: FanOutOutcome }> {
  const next = normalizePermissions(codes);
  const threshold = ctx.settings.inlineFanOutThreshold;
  const result = await ctx.db.transaction(async (tx) => {
    const role = await requireRole(tx, roleId, 'update');
    ensureRoleActive(role);
    const current = await permissionsOf(tx, roleId);
    if (samePermissions(current, next)) {
      return { role: { ...role, permissions: current }, fanOut: { mode: 'none', users: 0, taskId: null } as FanOutOutcome };
    }
    const now = ctx.clock.now();
    const removed = current.filter((c) => !next.includes(c));
    const added = next.filter((c) => !current.includes(c));
    await deletePermissions(tx, roleId, removed);
    await insertPermissions(tx, roleId, added, now);
    const updated: Role = { ...role, version: role.version + 1, updatedAt: now };
    await setRoleVersion(tx, roleId, updated.version, now);

    const users = await countActiveUsersOfRole(tx, roleId, now, threshold + 1);
    let fanOut: FanOutOutcome;
    if (chooseFanOut(users, threshold) === 'inline') {
      // Share-locked like a queued fan-out page, so per user the events keep commit order (access-events.ts).
      const userIds = users === 0 ? [] : await pageActiveUsersOfRole(tx, { roleId, after: null, limit: users, now, lockUsers: true });
      const snapshots = await loadAccessSnapshots(tx, userIds, now);
      await enqueueAccessEvents(
        tx,
        snapshots.map((s) =>
          accessChangedEvent(s, { reason: 'RolePermissionsChanged', version: updated.version, occurredAt: now, correlationId }),
        ),
      );
      fanOut = { mode: 'inline', users: snapshots.length, taskId: null };
    } else {
      const taskId = newId();
      await insertFanOutTask(tx, { id: taskId, roleId, companyId: role.companyId, roleVersion: updated.version, now });
      fanOut = { mode: 'queued', users, taskId };
    }
    return { role: { ...updated, permissions: next }, fanOut };
  });
  const { fanOut } = result;
  if (fanOut.mode === 'inline') {
    ctx.metrics.size.observe({ path: 'inline' }, fanOut.users);
    ctx.metrics.accessEvents.inc({ reason: 'RolePermissionsChanged' }, fanOut.users);
  }
  if (fanOut.mode !== 'none') {
    ctx.log.info(
      { roleId, roleVersion: result.role.version, permissions: next.length, fanOut: fanOut.mode, users: fanOut.users, taskId: fanOut.taskId },
      'role permissions changed',
    );
  }
  return result;
}

/** Archives the role and revokes its active assignments, announcing each user (RoleArchived): an archived role grants nothing (INV-R5). */
export async function archiveRole(ctx: IdentityContext, roleId: string, correlationId?: string): Promise<{ role: Role; revokedUsers: number }> {
  const result = await ctx.db.transaction(async (tx) => {
    const role = await requireRole(tx, roleId, 'update');
    if (role.status === 'Archived') return { role, revokedUsers: 0 };
    const now = ctx.clock.now();
    const archived: Role = { ...role, status: 'Archived', version: role.version + 1, archivedAt: now, updatedAt: now };
    await markRoleArchived(tx, roleId, archived.version, now);
    const revoked = await revokeAllAssignmentsOfRole(tx, roleId, now);
    for (let i = 0; i < revoked.length; i += IDENTITY_DEFAULTS.roleSnapshotChunk) {
      const chunk = revoked.slice(i, i + IDENTITY_DEFAULTS.roleSnapshotChunk);
      const versions = new Map(chunk.map((u) => [u.userId, u.version]));
      const snapshots = await loadAccessSnapshots(
        tx,
        chunk.map((u) => u.userId),
        now,
      );
      await enqueueAccessEvents(
        tx,
        snapshots.map((s) => accessChangedEvent(s, { reason: 'RoleArchived', version: versions.get(s.userId)!, occurredAt: now, correlationId })),
      );
    }
    return { role: archived, revokedUsers: revoked.length };
  });
  if (result.revokedUsers > 0) ctx.metrics.accessEvents.inc({ reason: 'RoleArchived' }, result.revokedUsers);
  ctx.log.info({ roleId, revokedUsers: result.revokedUsers }, 'role archived');
  return result;
}
