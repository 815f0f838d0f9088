import type { Db } from '../../../platform/db/index.ts';
import { newId } from '../../../platform/time.ts';
import { enqueueAccessEvents } from './access-events.ts';
import { loadAccessSnapshots, maxAssignmentVersion } from './access-sql.ts';
import { expireDueSameScopeGrant, findAssignment, insertAssignment, markAssignmentRevoked } from './assignment-sql.ts';
import { accessChangedEvent, checkGrant, nextAssignmentVersion, normalizeScope, type Assignment, type ScopeInput, type UserAccessSnapshot } from './assignments.ts';
import type { AccessChangeReason } from '../../../contracts/identity-events.ts';
import type { IdentityContext } from '../context.ts';
import { IdentityErrors, isUniqueViolation } from '../errors.ts';
import { requireRole } from '../roles/role-operations.ts';
import { findUser } from '../users/user-sql.ts';

/**
 * grant-role-assignment / revoke-role-assignment: the change and the user's UserAccessChanged
 * (full snapshot, Version = the user's new max(RoleAssignment.Version)) in one transaction.
 * Lock order everywhere: role, then user, then assignments — so these never deadlock each other,
 * set-role-permissions, archive or the expiry worker.
 */

const ACTIVE_SCOPE_UNIQUE = 'ux_role_assignments_active_scope';

export async function grantRoleAssignment(
  ctx: IdentityContext,
  input: ScopeInput & { roleId: string; userId: string; expiresAt?: Date | null },
  correlationId?: string,
): Promise<Assignment> {
  const scope = normalizeScope(input);
  const expiresAt = input.expiresAt ?? null;
  let assignment: Assignment;
  try {
    assignment = await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now();
      const role = await requireRole(tx, input.roleId, 'share');
      const user = await findUser(tx, input.userId, { forUpdate: true });
      if (!user) throw IdentityErrors.userNotFound(input.userId);
      checkGrant({ role, user, expiresAt, now });
      const version = nextAssignmentVersion(await maxAssignmentVersion(tx, user.id));
      // A same-scope grant past its ExpiresAt is no longer active even if the expiry worker has not
      // marked it yet: mark it now, so it neither blocks this grant nor lingers.
      await expireDueSameScopeGrant(tx, { roleId: role.id, userId: user.id, scope, now, version });
      const created: Assignment = {
        id: newId(),
        roleId: role.id,
        userId: user.id,
        ...scope,
        status: 'Active',
        expiresAt,
        version,
        grantedAt: now,
        revokedAt: null,
        expiredAt: null,
        updatedAt: now,
      };
      await insertAssignment(tx, created);
      await announceUser(tx, user.id, { reason: 'AssignmentGranted', version, now, correlationId });
      return created;
    });
  } catch (err) {
    if (isUniqueViolation(err, ACTIVE_SCOPE_UNIQUE)) throw IdentityErrors.assignmentDuplicate();
    throw err;
  }
  ctx.metrics.accessEvents.inc({ reason: 'AssignmentGranted' });
  ctx.log.info(
    { assignmentId: assignment.id, roleId: assignment.roleId, userId: assignment.userId, scopeType: assignment.scopeType, version: assignment.version },
    'role assignment granted',
  );
  return assignment;
}

/** Revokes an active assignment; revoking one that is no longer active changes and announces nothing. */
export async function revokeRoleAssignment(ctx: IdentityContext, id: string, correlationId?: string): Promise<{ assignment: Assignment; changed: boolean }> {
  const seen = await findAssignment(ctx.db, id);
  if (!seen) throw IdentityErrors.assignmentNotFound(id);
  const result = await ctx.db.transaction(async (tx) => {
    await findUser(tx, seen.userId, { forUpdate: true });
    const current = (await findAssignment(tx, id, true))!;
    if (current.status !== 'Active') return { assignment: current, changed: false };
    const now = ctx.clock.now();
    const version = nextAssignmentVersion(await maxAssignmentVersion(tx, current.userId));
    const revoked: Assignment = { ...current, status: 'Revoked', revokedAt: now, updatedAt: now, version };
    await markAssignmentRevoked(tx, id, version, now);
    await announceUser(tx, current.userId, { reason: 'AssignmentRevoked', version, now, correlationId });
    return { assignment: revoked, changed: true };
  });
  if (result.changed) {
    ctx.metrics.accessEvents.inc({ reason: 'AssignmentRevoked' });
    ctx.log.info({ assignmentId: id, roleId: seen.roleId, userId: seen.userId, version: result.assignment.version }, 'role assignment revoked');
  }
  return result;
}

export async function getRoleAssignment(ctx: IdentityContext, id: string): Promise<Assignment> {
  const a = await findAssignment(ctx.db, id);
  if (!a) throw IdentityErrors.assignmentNotFound(id);
  return a;
}

/** The user's current access: every active assignment (not past ExpiresAt) with its RoleCode. */
export async function getUserAccess(ctx: IdentityContext, userId: string): Promise<UserAccessSnapshot> {
  const [snapshot] = await loadAccessSnapshots(ctx.db, [userId], ctx.clock.now());
  if (!snapshot) throw IdentityErrors.userNotFound(userId);
  return snapshot;
}

async function announceUser(
  tx: Db,
  userId: string,
  change: { reason: AccessChangeReason; version: number; now: Date; correlationId?: string },
): Promise<void> {
  const [snapshot] = await loadAccessSnapshots(tx, [userId], change.now);
  // The user's row is locked FOR UPDATE by the caller: the id is taken after it (access-events.ts).
  await enqueueAccessEvents(tx, [
    accessChangedEvent(snapshot!, { reason: change.reason, version: change.version, occurredAt: change.now, correlationId: change.correlationId }),
  ]);
}
