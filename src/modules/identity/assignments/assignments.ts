import type { NewEvent } from '../../../platform/outbox/index.ts';
import { TOPICS } from '../../../event-topics.ts';
import {
  CONTRACT_VERSION,
  USER_ACCESS_CHANGED_EVENT,
  USER_AGGREGATE,
  type AccessChangeReason,
  type ActiveRoleAssignmentSnapshot,
  type ScopeType,
  type UserAccessChangedKafkaEvent,
} from '../../../contracts/identity-events.ts';
import { IdentityErrors } from '../errors.ts';
import type { Role } from '../roles/roles.ts';

/** Pure rules of RoleAssignment and of the access snapshot a user's events carry. */

export type AssignmentStatus = 'Active' | 'Revoked' | 'Expired';
export const SCOPE_TYPES: readonly ScopeType[] = ['Platform', 'Organization', 'ProjectGroup', 'Project'];

export interface Scope {
  scopeType: ScopeType;
  scopeOrganizationId: string | null;
  scopeProjectGroupId: string | null;
  scopeProjectId: string | null;
}

export interface ScopeInput {
  scopeType: ScopeType;
  scopeOrganizationId?: string | null;
  scopeProjectGroupId?: string | null;
  scopeProjectId?: string | null;
}

/** The one id field each scope type needs; every other scope id must be absent. */
const SCOPE_ID_FIELD = {
  Platform: null,
  Organization: 'scopeOrganizationId',
  ProjectGroup: 'scopeProjectGroupId',
  Project: 'scopeProjectId',
} as const satisfies Record<ScopeType, keyof Scope | null>;

const SCOPE_ID_FIELDS = ['scopeOrganizationId', 'scopeProjectGroupId', 'scopeProjectId'] as const;

export function normalizeScope(input: ScopeInput): Scope {
  const needed = SCOPE_ID_FIELD[input.scopeType];
  for (const field of SCOPE_ID_FIELDS) {
    const given = input[field] ?? null;
    if (field === needed && given === null) throw IdentityErrors.invalidScope(`scope ${input.scopeType} needs ${field}`);
    if (field !== needed && given !== null) throw IdentityErrors.invalidScope(`scope ${input.scopeType} takes no ${field}`);
  }
  return {
    scopeType: input.scopeType,
    scopeOrganizationId: input.scopeOrganizationId ?? null,
    scopeProjectGroupId: input.scopeProjectGroupId ?? null,
    scopeProjectId: input.scopeProjectId ?? null,
  };
}

/** A RoleAssignment row. */
export interface Assignment extends Scope {
  id: string;
  roleId: string;
  userId: string;
  status: AssignmentStatus;
  expiresAt: Date | null;
  version: number;
  grantedAt: Date;
  revokedAt: Date | null;
  expiredAt: Date | null;
  updatedAt: Date;
}

/**
 * grant-role-assignment guards: the role is Active; a company role goes only to users of that
 * company (a platform role to anyone); an expiry lies in the future.
 */
export function checkGrant(args: {
  role: Pick<Role, 'id' | 'status' | 'companyId'>;
  user: { companyId: string | null };
  expiresAt: Date | null;
  now: Date;
}): void {
  if (args.role.status !== 'Active') throw IdentityErrors.roleArchived(args.role.id);
  if (args.role.companyId !== null && args.role.companyId !== args.user.companyId) throw IdentityErrors.roleCompanyMismatch();
  if (args.expiresAt !== null && args.expiresAt.getTime() <= args.now.getTime()) throw IdentityErrors.expiresInPast();
}

/** Active means status Active and not past ExpiresAt — even before the expiry worker marks it. */
export function isActiveAt(a: { status: AssignmentStatus; expiresAt: Date | null }, now: Date): boolean {
  return a.status === 'Active' && (a.expiresAt === null || a.expiresAt.getTime() > now.getTime());
}

/** Next Version on the user's assignment axis: above every version any of the user's assignments has. */
export function nextAssignmentVersion(currentMax: number | null): number {
  return (currentMax ?? 0) + 1;
}

/** One active assignment as a snapshot carries it (camelCase; PascalCase on the wire). */
export interface AssignmentView extends Scope {
  assignmentId: string;
  roleId: string;
  roleCode: string;
  expiresAt: Date | null;
}

/** A user's whole current access. */
export interface UserAccessSnapshot {
  userId: string;
  companyId: string | null;
  activeAssignments: AssignmentView[];
}

export function assignmentPayload(a: AssignmentView): ActiveRoleAssignmentSnapshot {
  return {
    AssignmentId: a.assignmentId,
    RoleId: a.roleId,
    RoleCode: a.roleCode,
    ScopeType: a.scopeType,
    ScopeOrganizationId: a.scopeOrganizationId,
    ScopeProjectGroupId: a.scopeProjectGroupId,
    ScopeProjectId: a.scopeProjectId,
    ExpiresAt: a.expiresAt?.toISOString() ?? null,
  };
}

export function accessChangedEvent(
  snapshot: UserAccessSnapshot,
  change: { reason: AccessChangeReason; version: number; occurredAt: Date; correlationId?: string | null },
): NewEvent<UserAccessChangedKafkaEvent> {
  return {
    topic: TOPICS.identityAccess,
    key: snapshot.userId,
    eventType: USER_ACCESS_CHANGED_EVENT,
    contractVersion: CONTRACT_VERSION,
    aggregateType: USER_AGGREGATE,
    aggregateId: snapshot.userId,
    occurredAt: change.occurredAt,
    correlationId: change.correlationId ?? null,
    payload: {
      UserId: snapshot.userId,
      CompanyId: snapshot.companyId,
      ChangeReason: change.reason,
      Version: change.version,
      ActiveAssignments: snapshot.activeAssignments.map(assignmentPayload),
    },
  };
}
