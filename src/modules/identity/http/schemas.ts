import { Type } from '@sinclair/typebox';
import { Nullable, Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { SCOPE_TYPES } from '../assignments/assignments.ts';
import { FANOUT_TASK_STATUSES } from '../access-fanout/fanout-sql.ts';
import { PERMISSION_CODE_MAX, PERMISSION_CODE_PATTERN, PERMISSIONS_MAX, ROLE_CODE_PATTERN } from '../roles/roles.ts';
import { NAME_MAX, USER_STATUSES, USER_TYPES } from '../users/users.ts';
import { named } from '../../../platform/http/index.ts';

/** TypeBox schemas of the identity REST API (camelCase bodies); reused by routes and tests. */

const oneOf = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));

export const IdParams = Type.Object({ id: Uuid });

export const Name = named('PersonName', Type.Object(
  {
    firstName: Text({ minLength: 1, maxLength: NAME_MAX }),
    middleName: Type.Optional(Nullable(Text({ maxLength: NAME_MAX }))),
    lastName: Text({ maxLength: NAME_MAX }),
  },
  { additionalProperties: false },
));

const UserStatus = oneOf(USER_STATUSES);

export const CreateUserBody = Type.Object(
  {
    id: Type.Optional(
      Text({
        pattern: Uuid.pattern,
        maxLength: 36,
        description:
          "The user's id, e.g. the identity provider's `sub` (tokens then name this user); stored lower-case. Omitted: a new UUIDv7. An id already taken → 409 IDENTITY_USER_ID_TAKEN",
      }),
    ),
    name: Name,
    phoneNumber: Text({ minLength: 1, maxLength: 40, description: 'Any common notation; stored as E.164' }),
    status: Type.Optional(UserStatus),
    type: Type.Optional(oneOf(USER_TYPES)),
    companyId: Type.Optional(Nullable(Uuid)),
  },
  { additionalProperties: false },
);

export const PatchUserBody = Type.Object(
  { name: Type.Optional(Name), phoneNumber: Type.Optional(Text({ minLength: 1, maxLength: 40 })), status: Type.Optional(UserStatus) },
  { additionalProperties: false, minProperties: 1 },
);

export const UserReply = named('IdentityUser', Type.Object({
  id: Uuid,
  name: Type.Object({ firstName: Type.String(), middleName: Nullable(Type.String()), lastName: Type.String() }),
  phoneNumber: Type.String(),
  status: Type.String(),
  type: Type.String(),
  companyId: Nullable(Uuid),
  version: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}));

const Permissions = Type.Array(Text({ minLength: 1, maxLength: PERMISSION_CODE_MAX, pattern: PERMISSION_CODE_PATTERN }), {
  maxItems: PERMISSIONS_MAX,
});

export const CreateRoleBody = Type.Object(
  {
    code: Text({ pattern: ROLE_CODE_PATTERN, maxLength: 100 }),
    name: Text({ minLength: 1, maxLength: 200 }),
    companyId: Type.Optional(Nullable(Uuid)),
    permissions: Permissions,
  },
  { additionalProperties: false },
);

export const SetPermissionsBody = Type.Object({ permissions: Permissions }, { additionalProperties: false });

export const RoleReply = named('Role', Type.Object({
  id: Uuid,
  code: Type.String(),
  name: Type.String(),
  companyId: Nullable(Uuid),
  status: Type.String(),
  version: Type.Integer(),
  permissions: Type.Array(Type.String()),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  archivedAt: Nullable(Timestamp),
}));

export const SetPermissionsReply = Type.Object({
  role: RoleReply,
  fanOut: Type.Object({
    mode: oneOf(['none', 'inline', 'queued'] as const),
    users: Type.Integer({ description: 'Users announced inline; for queued, the count that passed the threshold' }),
    taskId: Nullable(Uuid),
  }),
});

export const ArchiveRoleReply = Type.Object({ role: RoleReply, revokedUsers: Type.Integer() });

const ScopeIds = {
  scopeOrganizationId: Type.Optional(Nullable(Uuid)),
  scopeProjectGroupId: Type.Optional(Nullable(Uuid)),
  scopeProjectId: Type.Optional(Nullable(Uuid)),
};

export const GrantBody = Type.Object(
  {
    roleId: Uuid,
    userId: Uuid,
    scopeType: oneOf(SCOPE_TYPES),
    ...ScopeIds,
    expiresAt: Type.Optional(Nullable(Timestamp)),
  },
  { additionalProperties: false },
);

export const AssignmentReply = named('RoleAssignment', Type.Object({
  id: Uuid,
  roleId: Uuid,
  userId: Uuid,
  scopeType: Type.String(),
  scopeOrganizationId: Nullable(Uuid),
  scopeProjectGroupId: Nullable(Uuid),
  scopeProjectId: Nullable(Uuid),
  status: Type.String(),
  expiresAt: Nullable(Timestamp),
  version: Type.Integer(),
  grantedAt: Timestamp,
  revokedAt: Nullable(Timestamp),
  expiredAt: Nullable(Timestamp),
}));

/** The same fields as the event's ActiveAssignments, camelCase. */
export const AccessReply = Type.Object({
  userId: Uuid,
  companyId: Nullable(Uuid),
  activeAssignments: Type.Array(
    Type.Object({
      assignmentId: Uuid,
      roleId: Uuid,
      roleCode: Type.String(),
      scopeType: Type.String(),
      scopeOrganizationId: Nullable(Uuid),
      scopeProjectGroupId: Nullable(Uuid),
      scopeProjectId: Nullable(Uuid),
      expiresAt: Nullable(Timestamp),
    }),
  ),
});

export const TaskReply = named('AccessFanoutTask', Type.Object({
  id: Uuid,
  roleId: Uuid,
  companyId: Nullable(Uuid),
  roleVersion: Type.Integer(),
  reason: Type.String(),
  status: Type.String(),
  cursor: Nullable(Uuid),
  /** Last UserId of the task's range (a large role's split); null = to the end. */
  rangeEnd: Nullable(Uuid),
  /** The task a sub-task was split from; null for a queued task. */
  parentId: Nullable(Uuid),
  processedCount: Type.Integer(),
  attemptCount: Type.Integer(),
  leaseExpiresAt: Nullable(Timestamp),
  lastError: Nullable(Type.String()),
  createdAt: Timestamp,
  startedAt: Nullable(Timestamp),
  completedAt: Nullable(Timestamp),
  updatedAt: Timestamp,
}));

export const ListTasksQuery = Type.Object(
  {
    status: Type.Optional(oneOf(FANOUT_TASK_STATUSES)),
    roleId: Type.Optional(Uuid),
    limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
  },
  { additionalProperties: false },
);

