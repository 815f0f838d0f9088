/**
 * Integration-event contracts the identity context produces (docs/architecture.md, "Event contracts"), kept
 * outside every module so producer and consumers share them without importing each other. Payload
 * field names are PascalCase exactly as the seeds spell them; the messenger's user replica (seed 002)
 * reads UserUpsertedKafkaEvent, external consumers read UserAccessChangedKafkaEvent.
 */

export const USER_UPSERTED_EVENT = 'UserUpsertedKafkaEvent';
export const USER_BLOCKED_EVENT = 'UserBlockedKafkaEvent';
export const USER_ACCESS_CHANGED_EVENT = 'UserAccessChangedKafkaEvent';
export const USER_AGGREGATE = 'User';
export const CONTRACT_VERSION = 1;

export type UserStatus = 'Invited' | 'Active' | 'Blocked' | 'Archived';
export type UserType = 'Investor' | 'CompanyEmployee' | 'PlatformStaff';

export interface FullNameSnapshot {
  FirstName: string;
  MiddleName: string | null;
  /** May be an empty string. */
  LastName: string;
}

/** pin.identity.users.v1, key = UserId: the user's full public snapshot after every change. */
export interface UserUpsertedKafkaEvent {
  UserId: string;
  Name: FullNameSnapshot;
  /** E.164. */
  PhoneNumber: string;
  Status: UserStatus;
  /** Bumped by every change of the user; consumers apply last-write-wins by it. */
  Version: number;
  Type: UserType;
  CompanyId: string | null;
}

/** pin.identity.users.v1, beside the upsert when a user becomes Blocked (the messenger skips it). */
export interface UserBlockedKafkaEvent {
  UserId: string;
  Version: number;
  BlockedAt: string;
}

export type AccessChangeReason =
  | 'RolePermissionsChanged'
  | 'AssignmentGranted'
  | 'AssignmentRevoked'
  | 'AssignmentExpired'
  | 'RoleArchived';

export type ScopeType = 'Platform' | 'Organization' | 'ProjectGroup' | 'Project';

export interface ActiveRoleAssignmentSnapshot {
  AssignmentId: string;
  RoleId: string;
  RoleCode: string;
  ScopeType: ScopeType;
  ScopeOrganizationId: string | null;
  ScopeProjectGroupId: string | null;
  ScopeProjectId: string | null;
  ExpiresAt: string | null;
}

/**
 * pin.identity.access.v1, key = UserId, AggregateType "User". ActiveAssignments is the user's whole
 * current access (self-healing snapshot). Version is RoleDefinition.Version for a role's fan-out and
 * max(RoleAssignment.Version) of the user for grant/revoke/expire — two axes, so consumers trust the
 * snapshot rather than strict monotonicity across reasons (seed 003).
 */
export interface UserAccessChangedKafkaEvent {
  UserId: string;
  /** The user's company (not the role's); null for users outside any company. */
  CompanyId: string | null;
  ChangeReason: AccessChangeReason;
  Version: number;
  ActiveAssignments: ActiveRoleAssignmentSnapshot[];
}
