import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, pgSchema, primaryKey, text, timestamp, unique, uniqueIndex, uuid, varchar } from 'drizzle-orm/pg-core';

/** The identity context's own PostgreSQL schema. */
export const identitySchema = pgSchema('identity');

const ts = (name: string) => timestamp(name, { withTimezone: true });

/** The user registry; every change bumps `version` and announces a UserUpserted snapshot. */
export const users = identitySchema.table(
  'users',
  {
    id: uuid('id').primaryKey(),
    firstName: varchar('first_name', { length: 128 }).notNull(),
    middleName: varchar('middle_name', { length: 128 }),
    // May be empty (seed 002: LastName allows an empty string).
    lastName: varchar('last_name', { length: 128 }).notNull(),
    /** E.164, unique: the messenger finds contacts by it. */
    phoneNumber: varchar('phone_number', { length: 16 }).notNull(),
    status: text('status').notNull(),
    type: text('type').notNull(),
    companyId: uuid('company_id'),
    version: bigint('version', { mode: 'number' }).notNull().default(1),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    unique('ux_users_phone_number').on(t.phoneNumber),
    index('ix_users_company_id').on(t.companyId),
    check('ck_users_status', sql`${t.status} in ('Invited', 'Active', 'Blocked', 'Archived')`),
    check('ck_users_type', sql`${t.type} in ('Investor', 'CompanyEmployee', 'PlatformStaff')`),
    check('ck_users_phone_e164', sql`${t.phoneNumber} ~ '^\\+[1-9][0-9]{6,14}$'`),
    check('ck_users_version', sql`${t.version} >= 1`),
  ],
);

/** RoleDefinition: a company role (company_id set) or a platform system role (null). */
export const roleDefinitions = identitySchema.table(
  'role_definitions',
  {
    id: uuid('id').primaryKey(),
    code: varchar('code', { length: 100 }).notNull(),
    name: varchar('name', { length: 200 }).notNull(),
    companyId: uuid('company_id'),
    status: text('status').notNull().default('Active'),
    /** Bumped by every change of the permission set; the fan-out events carry it. */
    version: bigint('version', { mode: 'number' }).notNull().default(1),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    archivedAt: ts('archived_at'),
  },
  (t) => [
    // One code per company, and one per platform (null company): NULLS NOT DISTINCT.
    unique('ux_role_definitions_company_code').on(t.companyId, t.code).nullsNotDistinct(),
    check('ck_role_definitions_status', sql`${t.status} in ('Active', 'Archived')`),
    check('ck_role_definitions_version', sql`${t.version} >= 1`),
  ],
);

/** RolePermission: the role's permission set, replaced as a whole by set-role-permissions. */
export const rolePermissions = identitySchema.table(
  'role_permissions',
  {
    roleId: uuid('role_id')
      .notNull()
      .references(() => roleDefinitions.id, { onDelete: 'restrict' }),
    permissionCode: varchar('permission_code', { length: 150 }).notNull(),
    grantedAt: ts('granted_at').notNull(),
  },
  (t) => [primaryKey({ name: 'pk_role_permissions', columns: [t.roleId, t.permissionCode] })],
);

/**
 * RoleAssignment: a role granted to a user within one scope. `version` follows the user's assignment
 * axis: every change of any of a user's assignments sets it to the user's max + 1, so
 * max(version) over a user's assignments only grows (the grant/revoke/expire event Version).
 */
export const roleAssignments = identitySchema.table(
  'role_assignments',
  {
    id: uuid('id').primaryKey(),
    roleId: uuid('role_id')
      .notNull()
      .references(() => roleDefinitions.id, { onDelete: 'restrict' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'restrict' }),
    scopeType: text('scope_type').notNull(),
    scopeOrganizationId: uuid('scope_organization_id'),
    scopeProjectGroupId: uuid('scope_project_group_id'),
    scopeProjectId: uuid('scope_project_id'),
    status: text('status').notNull().default('Active'),
    expiresAt: ts('expires_at'),
    version: bigint('version', { mode: 'number' }).notNull().default(1),
    grantedAt: ts('granted_at').notNull(),
    revokedAt: ts('revoked_at'),
    expiredAt: ts('expired_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    // Keyset pages of a role's unique users (fan-out, inline count, archive).
    index('ix_role_assignments_role_user_active').on(t.roleId, t.userId).where(sql`${t.status} = 'Active'`),
    // A user's snapshot: all their active assignments.
    index('ix_role_assignments_user_active').on(t.userId).where(sql`${t.status} = 'Active'`),
    index('ix_role_assignments_user_id').on(t.userId),
    // The expiry worker's scan.
    index('ix_role_assignments_expires_at').on(t.expiresAt).where(sql`${t.status} = 'Active' and ${t.expiresAt} is not null`),
    // No two active grants of the same role to the same user in the same scope.
    uniqueIndex('ux_role_assignments_active_scope')
      .on(
        t.roleId,
        t.userId,
        t.scopeType,
        sql`coalesce(${t.scopeOrganizationId}, ${t.scopeProjectGroupId}, ${t.scopeProjectId}, '00000000-0000-0000-0000-000000000000'::uuid)`,
      )
      .where(sql`${t.status} = 'Active'`),
    check('ck_role_assignments_status', sql`${t.status} in ('Active', 'Revoked', 'Expired')`),
    check('ck_role_assignments_version', sql`${t.version} >= 1`),
    check(
      'ck_role_assignments_scope',
      sql`(${t.scopeType} = 'Platform' and ${t.scopeOrganizationId} is null and ${t.scopeProjectGroupId} is null and ${t.scopeProjectId} is null)
       or (${t.scopeType} = 'Organization' and ${t.scopeOrganizationId} is not null and ${t.scopeProjectGroupId} is null and ${t.scopeProjectId} is null)
       or (${t.scopeType} = 'ProjectGroup' and ${t.scopeOrganizationId} is null and ${t.scopeProjectGroupId} is not null and ${t.scopeProjectId} is null)
       or (${t.scopeType} = 'Project' and ${t.scopeOrganizationId} is null and ${t.scopeProjectGroupId} is null and ${t.scopeProjectId} is not null)`,
    ),
  ],
);

/** AccessFanOutTask (seed 003): one queued fan-out of a role's permission change to its users. */
export const accessFanoutTasks = identitySchema.table(
  'access_fanout_tasks',
  {
    id: uuid('id').primaryKey(),
    roleId: uuid('role_id')
      .notNull()
      .references(() => roleDefinitions.id, { onDelete: 'restrict' }),
    companyId: uuid('company_id'),
    roleVersion: bigint('role_version', { mode: 'number' }).notNull(),
    reason: text('reason').notNull(),
    status: text('status').notNull().default('Pending'),
    /** Last UserId whose event is committed; null = from the start. A sub-task starts at its range's lower bound (exclusive). */
    cursor: uuid('cursor'),
    /** Last UserId (inclusive) of this task's range; null = to the end. Set when a large role is split into sub-tasks. */
    rangeEnd: uuid('range_end'),
    /** The task a sub-task was split from (its range is one of the role's); null for a task set-role-permissions queued. */
    parentId: uuid('parent_id'),
    processedCount: integer('processed_count').notNull().default(0),
    /** Leases taken; also the fencing token of the current holder. */
    attemptCount: integer('attempt_count').notNull().default(0),
    leaseExpiresAt: ts('lease_expires_at'),
    lastError: varchar('last_error', { length: 512 }),
    /**
     * W3C traceparent of the role change that queued the fan-out (null: tracing off), copied to its
     * sub-tasks: the ops console links a Failed task to it.
     */
    traceparent: varchar('traceparent', { length: 55 }),
    createdAt: ts('created_at').notNull(),
    startedAt: ts('started_at'),
    completedAt: ts('completed_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('ix_access_fanout_tasks_role_id').on(t.roleId),
    index('ix_access_fanout_tasks_company_id').on(t.companyId),
    index('ix_access_fanout_tasks_parent_id').on(t.parentId),
    index('ix_access_fanout_tasks_pending').on(t.createdAt, t.id).where(sql`${t.status} in ('Pending', 'InProgress')`),
    index('ix_access_fanout_tasks_status_created').on(t.status, t.createdAt),
    check('ck_access_fanout_tasks_status', sql`${t.status} in ('Pending', 'InProgress', 'Completed', 'Failed')`),
    check('ck_access_fanout_tasks_reason', sql`${t.reason} in ('RolePermissionsChanged')`),
    check('ck_access_fanout_tasks_role_version', sql`${t.roleVersion} >= 1`),
    check('ck_access_fanout_tasks_processed_count', sql`${t.processedCount} >= 0`),
    check('ck_access_fanout_tasks_attempt_count', sql`${t.attemptCount} >= 0`),
  ],
);
