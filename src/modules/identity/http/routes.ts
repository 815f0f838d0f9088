import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { errorCodes } from '../../../platform/http/index.ts';
import { IdentityErrors } from '../errors.ts';
import { getRoleAssignment, getUserAccess, grantRoleAssignment, revokeRoleAssignment } from '../assignments/assignment-operations.ts';
import type { Assignment } from '../assignments/assignments.ts';
import type { UserAccessSnapshot } from '../assignments/assignments.ts';
import type { IdentityContext } from '../context.ts';
import { getTask, listTasks, type FanOutTask } from '../access-fanout/fanout-sql.ts';
import { replayFailedTasks } from '../access-fanout/failed-tasks-sql.ts';
import {
  AccessReply,
  ArchiveRoleReply,
  AssignmentReply,
  CreateRoleBody,
  CreateUserBody,
  GrantBody,
  IdParams,
  ListTasksQuery,
  PatchUserBody,
  RoleReply,
  SetPermissionsBody,
  SetPermissionsReply,
  TaskReply,
  UserReply,
} from './schemas.ts';
import { archiveRole, createRole, getRole, setRolePermissions, type RoleWithPermissions } from '../roles/role-operations.ts';
import type { Role } from '../roles/roles.ts';
import { createUser, getUser, patchUser } from '../users/user-operations.ts';
import type { User } from '../users/users.ts';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

const userBody = (u: User) => ({
  id: u.id,
  name: { firstName: u.firstName, middleName: u.middleName, lastName: u.lastName },
  phoneNumber: u.phoneNumber,
  status: u.status,
  type: u.type,
  companyId: u.companyId,
  version: u.version,
  createdAt: u.createdAt.toISOString(),
  updatedAt: u.updatedAt.toISOString(),
});

const roleBody = (r: Role, permissions: string[]) => ({
  id: r.id,
  code: r.code,
  name: r.name,
  companyId: r.companyId,
  status: r.status,
  version: r.version,
  permissions,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
  archivedAt: iso(r.archivedAt),
});

const assignmentBody = (a: Assignment) => ({
  id: a.id,
  roleId: a.roleId,
  userId: a.userId,
  scopeType: a.scopeType,
  scopeOrganizationId: a.scopeOrganizationId,
  scopeProjectGroupId: a.scopeProjectGroupId,
  scopeProjectId: a.scopeProjectId,
  status: a.status,
  expiresAt: iso(a.expiresAt),
  version: a.version,
  grantedAt: a.grantedAt.toISOString(),
  revokedAt: iso(a.revokedAt),
  expiredAt: iso(a.expiredAt),
});

const accessBody = (s: UserAccessSnapshot) => ({
  userId: s.userId,
  companyId: s.companyId,
  activeAssignments: s.activeAssignments.map((a) => ({ ...a, expiresAt: iso(a.expiresAt) })),
});

const taskBody = (t: FanOutTask) => ({
  ...t,
  leaseExpiresAt: iso(t.leaseExpiresAt),
  createdAt: t.createdAt.toISOString(),
  startedAt: iso(t.startedAt),
  completedAt: iso(t.completedAt),
  updatedAt: t.updatedAt.toISOString(),
});

const tags = ['identity'];
/** Each route's own refusals; the kernel adds the input, token, admin and availability codes (openapi-components.ts). */
const userNotFound = errorCodes('IDENTITY_USER_NOT_FOUND');
const roleNotFound = errorCodes('IDENTITY_ROLE_NOT_FOUND');
const assignmentNotFound = errorCodes('IDENTITY_ASSIGNMENT_NOT_FOUND');
const invalidPermission = errorCodes('IDENTITY_INVALID_PERMISSION');

/** Identity admin REST: every route needs an admin token. */
export function registerIdentityRoutes(app: FastifyInstance, ctx: IdentityContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const admin = { preHandler: app.requireAdmin };

  r.post(
    '/api/identity/users',
    { ...admin, schema: { operationId: 'createIdentityUser', tags, summary: "Create a user (announced on pin.identity.users.v1), under a given id (an identity provider's sub) or a new one", body: CreateUserBody, response: { 201: UserReply, 400: errorCodes('IDENTITY_INVALID_NAME', 'IDENTITY_INVALID_PHONE'), 409: errorCodes('IDENTITY_PHONE_TAKEN', 'IDENTITY_USER_ID_TAKEN') } } },
    async (req, reply) => reply.status(201).send(userBody(await createUser(ctx, req.body, req.id))),
  );

  r.get(
    '/api/identity/users/:id',
    { ...admin, schema: { operationId: 'getIdentityUser', tags, summary: 'A user', params: IdParams, response: { 200: UserReply, 404: userNotFound } } },
    async (req) => userBody(await getUser(ctx, req.params.id)),
  );

  r.patch(
    '/api/identity/users/:id',
    {
      ...admin,
      schema: { operationId: 'updateIdentityUser', tags, summary: 'Change name, phone or status (bumps Version when anything changes)', params: IdParams, body: PatchUserBody, response: { 200: UserReply, 400: errorCodes('IDENTITY_INVALID_NAME', 'IDENTITY_INVALID_PHONE'), 404: userNotFound, 409: errorCodes('IDENTITY_PHONE_TAKEN') } },
    },
    async (req) => userBody(await patchUser(ctx, req.params.id, req.body, req.id)),
  );

  r.get(
    '/api/identity/users/:id/access',
    { ...admin, schema: { operationId: 'getUserAccess', tags, summary: "The user's current access snapshot (the event's ActiveAssignments)", params: IdParams, response: { 200: AccessReply, 404: userNotFound } } },
    async (req) => accessBody(await getUserAccess(ctx, req.params.id)),
  );

  r.post(
    '/api/identity/roles',
    { ...admin, schema: { operationId: 'createRole', tags, summary: 'Create a role with its permissions', body: CreateRoleBody, response: { 201: RoleReply, 400: invalidPermission, 409: errorCodes('IDENTITY_ROLE_CODE_TAKEN') } } },
    async (req, reply) => {
      const role: RoleWithPermissions = await createRole(ctx, req.body);
      return reply.status(201).send(roleBody(role, role.permissions));
    },
  );

  r.get(
    '/api/identity/roles/:id',
    { ...admin, schema: { operationId: 'getRole', tags, summary: 'A role with its permissions', params: IdParams, response: { 200: RoleReply, 404: roleNotFound } } },
    async (req) => {
      const role = await getRole(ctx, req.params.id);
      return roleBody(role, role.permissions);
    },
  );

  r.put(
    '/api/identity/roles/:id/permissions',
    {
      ...admin,
      schema: {
        operationId: 'setRolePermissions',
        tags,
        summary: "set-role-permissions: replace the set, bump the role's Version, announce its users inline or queue a fan-out task",
        params: IdParams,
        body: SetPermissionsBody,
        response: { 200: SetPermissionsReply, 400: invalidPermission, 404: roleNotFound, 409: errorCodes('IDENTITY_ROLE_ARCHIVED') },
      },
    },
    async (req) => {
      const { role, fanOut } = await setRolePermissions(ctx, req.params.id, req.body.permissions, req.id);
      return { role: roleBody(role, role.permissions), fanOut };
    },
  );

  r.post(
    '/api/identity/roles/:id/archive',
    {
      ...admin,
      schema: { operationId: 'archiveRole', tags, summary: 'Archive a role; its active assignments are revoked and announced (INV-R5)', params: IdParams, response: { 200: ArchiveRoleReply, 404: roleNotFound } },
    },
    async (req) => {
      const { role, revokedUsers } = await archiveRole(ctx, req.params.id, req.id);
      const { permissions } = await getRole(ctx, role.id);
      return { role: roleBody(role, permissions), revokedUsers };
    },
  );

  r.post(
    '/api/identity/role-assignments',
    {
      ...admin,
      schema: { operationId: 'assignRole', tags, summary: 'grant-role-assignment (announces the user at once)', body: GrantBody, response: { 201: AssignmentReply, 400: errorCodes('IDENTITY_INVALID_SCOPE', 'IDENTITY_ASSIGNMENT_EXPIRES_IN_PAST'), 404: errorCodes('IDENTITY_ROLE_NOT_FOUND', 'IDENTITY_USER_NOT_FOUND'), 409: errorCodes('IDENTITY_ROLE_ARCHIVED', 'IDENTITY_ROLE_COMPANY_MISMATCH', 'IDENTITY_ASSIGNMENT_DUPLICATE') } },
    },
    async (req, reply) => {
      const { expiresAt, ...rest } = req.body;
      const assignment = await grantRoleAssignment(ctx, { ...rest, expiresAt: expiresAt ? new Date(expiresAt) : null }, req.id);
      return reply.status(201).send(assignmentBody(assignment));
    },
  );

  r.get(
    '/api/identity/role-assignments/:id',
    { ...admin, schema: { operationId: 'getRoleAssignment', tags, summary: 'A role assignment', params: IdParams, response: { 200: AssignmentReply, 404: assignmentNotFound } } },
    async (req) => assignmentBody(await getRoleAssignment(ctx, req.params.id)),
  );

  r.delete(
    '/api/identity/role-assignments/:id',
    {
      ...admin,
      schema: { operationId: 'revokeRoleAssignment', tags, summary: 'revoke-role-assignment (announces the user at once; repeating it changes nothing)', params: IdParams, response: { 200: AssignmentReply, 404: assignmentNotFound } },
    },
    async (req) => assignmentBody((await revokeRoleAssignment(ctx, req.params.id, req.id)).assignment),
  );

  r.get(
    '/api/identity/access-fanout-tasks',
    {
      ...admin,
      schema: { operationId: 'listAccessFanoutTasks', tags, summary: 'Runbook: fan-out tasks, newest first', querystring: ListTasksQuery, response: { 200: Type.Object({ tasks: Type.Array(TaskReply) }) } },
    },
    async (req) => ({ tasks: (await listTasks(ctx.db, req.query)).map(taskBody) }),
  );

  r.post(
    '/api/identity/access-fanout-tasks/:id/replay',
    {
      ...admin,
      schema: { operationId: 'replayAccessFanoutTask', tags, summary: 'Runbook "access fan-out replay": Failed → Pending, AttemptCount = 0; resumes from Cursor', params: IdParams, response: { 200: TaskReply, 404: errorCodes('IDENTITY_FANOUT_TASK_NOT_FOUND'), 409: errorCodes('IDENTITY_FANOUT_TASK_NOT_FAILED') } },
    },
    async (req) => {
      const [task] = await ctx.db.transaction((tx) => replayFailedTasks(tx, { id: req.params.id }, 1, ctx.clock.now()));
      if (task) {
        ctx.log.info({ taskId: task.id, roleId: task.roleId }, 'access fan-out task replayed');
        return taskBody(task);
      }
      const existing = await getTask(ctx.db, req.params.id);
      if (!existing) throw IdentityErrors.fanOutTaskNotFound(req.params.id);
      throw IdentityErrors.fanOutTaskNotFailed(existing.status);
    },
  );
}
