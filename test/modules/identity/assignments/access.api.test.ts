import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import identity from '../../../../src/modules/identity/index.ts';
import type { UserAccessChangedKafkaEvent } from '../../../../src/contracts/identity-events.ts';
import { ManualClock } from '../../../../src/platform/time.ts';
import { buildTestApp } from '../../../support/app.ts';
import { ACCESS_TOPIC, outboxEvents, uniquePhone } from '../support.ts';

const clock = new ManualClock('2026-03-01T09:00:00Z');
// Threshold 3: a role with up to 3 users is announced inline, a 4th user tips it into the queue.
const t = await buildTestApp({ IDENTITY_INLINE_FANOUT_THRESHOLD: '3' }, { modules: [identity], clock });
const pool = t.database.pool;
const adminToken = await t.token({ admin: true });
const headers = { authorization: `Bearer ${adminToken}` };
const COMPANY = '0190a000-0000-7000-8000-0000000000c1';
const ORG = '0190a000-0000-7000-8000-00000000a001';

const api = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });

async function newUser(companyId: string | null = COMPANY): Promise<string> {
  const res = await api('POST', '/api/identity/users', { name: { firstName: 'U', lastName: 'L' }, phoneNumber: uniquePhone(), companyId });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

async function newRole(code: string, permissions = ['crm.deals.read'], companyId: string | null = COMPANY): Promise<string> {
  const res = await api('POST', '/api/identity/roles', { code, name: code, companyId, permissions });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

async function grant(roleId: string, userId: string, extra: Record<string, unknown> = { scopeType: 'Platform' }) {
  return api('POST', '/api/identity/role-assignments', { roleId, userId, ...extra });
}

const accessEvents = async (userId?: string) =>
  (await outboxEvents<UserAccessChangedKafkaEvent>(pool, ACCESS_TOPIC)).filter((e) => !userId || e.key === userId);

const counts = async () => {
  const { rows } = await pool.query(
    `select (select count(*) from identity.role_assignments)::int as assignments,
            (select count(*) from platform.outbox where topic = $1)::int as events,
            (select count(*) from identity.access_fanout_tasks)::int as tasks`,
    [ACCESS_TOPIC],
  );
  return rows[0] as { assignments: number; events: number; tasks: number };
};

describe('identity roles and assignments REST', () => {
  // Background work stops before the file's database is dropped (file-level hooks run later).
  after(() => t.app.close());

  test('grant announces the user at once: full snapshot with RoleCode, Version = max(RoleAssignment.Version), CompanyId of the user', async () => {
    const user = await newUser();
    const sales = await newRole('sales');
    const support = await newRole('support', ['crm.tickets.read'], null);
    const first = await grant(sales, user, { scopeType: 'Organization', scopeOrganizationId: ORG });
    assert.equal(first.statusCode, 201, first.body);
    const second = await grant(support, user);
    assert.equal(second.statusCode, 201, second.body);
    assert.equal(second.json().version, first.json().version + 1);

    const events = await accessEvents(user);
    assert.equal(events.length, 2);
    const last = events[1]!.payload;
    assert.equal(last.ChangeReason, 'AssignmentGranted');
    assert.equal(last.Version, second.json().version);
    assert.equal(last.CompanyId, COMPANY);
    assert.deepEqual(last.ActiveAssignments.map((a) => [a.RoleCode, a.ScopeType, a.ScopeOrganizationId]).sort(), [
      ['sales', 'Organization', ORG],
      ['support', 'Platform', null],
    ]);

    const access = await api('GET', `/api/identity/users/${user}/access`);
    assert.equal(access.statusCode, 200);
    assert.deepEqual(
      access.json().activeAssignments.map((a: { assignmentId: string; roleCode: string }) => [a.assignmentId, a.roleCode]).sort(),
      last.ActiveAssignments.map((a) => [a.AssignmentId, a.RoleCode]).sort(),
    );
  });

  test('revoke announces the user with a higher Version and without the assignment; repeating it announces nothing', async () => {
    const user = await newUser();
    const role = await newRole('revocable');
    const granted = (await grant(role, user)).json();
    const revoked = await api('DELETE', `/api/identity/role-assignments/${granted.id}`);
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.equal(revoked.json().status, 'Revoked');
    const events = await accessEvents(user);
    assert.equal(events.length, 2);
    assert.equal(events[1]!.payload.ChangeReason, 'AssignmentRevoked');
    assert.ok(events[1]!.payload.Version > events[0]!.payload.Version);
    assert.deepEqual(events[1]!.payload.ActiveAssignments, []);

    const again = await api('DELETE', `/api/identity/role-assignments/${granted.id}`);
    assert.equal(again.statusCode, 200);
    assert.equal((await accessEvents(user)).length, 2);
  });

  test('set-role-permissions at or below the threshold: bumps the role Version and announces every user inline with it', async () => {
    const role = await newRole('inline-role');
    const users = [await newUser(), await newUser(), await newUser()];
    for (const u of users) assert.equal((await grant(role, u)).statusCode, 201);
    const before = await counts();

    const res = await api('PUT', `/api/identity/roles/${role}/permissions`, { permissions: ['crm.deals.read', 'crm.deals.write'] });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.role.version, 2);
    assert.deepEqual(body.role.permissions, ['crm.deals.read', 'crm.deals.write']);
    assert.deepEqual(body.fanOut, { mode: 'inline', users: 3, taskId: null });

    const after = await counts();
    assert.equal(after.tasks, before.tasks);
    const fanned = (await accessEvents()).filter((e) => e.payload.ChangeReason === 'RolePermissionsChanged');
    assert.deepEqual(fanned.map((e) => e.key).sort(), [...users].sort());
    for (const e of fanned) assert.equal(e.payload.Version, 2);

    // The same set again changes nothing.
    const same = await api('PUT', `/api/identity/roles/${role}/permissions`, { permissions: ['crm.deals.write', 'crm.deals.read'] });
    assert.equal(same.json().fanOut.mode, 'none');
    assert.equal(same.json().role.version, 2);
    assert.deepEqual(await counts(), after);
  });

  test('set-role-permissions above the threshold: one AccessFanOutTask with the new RoleVersion, no inline events', async () => {
    const role = await newRole('queued-role');
    for (let i = 0; i < 4; i++) assert.equal((await grant(role, await newUser())).statusCode, 201);
    const before = await counts();
    const res = await api('PUT', `/api/identity/roles/${role}/permissions`, { permissions: ['crm.deals.delete'] });
    assert.equal(res.statusCode, 200, res.body);
    const { fanOut, role: updated } = res.json();
    assert.equal(fanOut.mode, 'queued');
    assert.ok(fanOut.taskId);
    const after = await counts();
    assert.equal(after.events, before.events);
    assert.equal(after.tasks, before.tasks + 1);

    const list = await api('GET', `/api/identity/access-fanout-tasks?status=Pending&roleId=${role}`);
    assert.equal(list.statusCode, 200, list.body);
    const [task] = list.json().tasks;
    assert.equal(task.id, fanOut.taskId);
    assert.equal(task.roleVersion, updated.version);
    assert.equal(task.reason, 'RolePermissionsChanged');
    assert.equal(task.companyId, COMPANY);
    assert.equal(task.processedCount, 0);

    const replay = await api('POST', `/api/identity/access-fanout-tasks/${task.id}/replay`);
    assert.equal(replay.statusCode, 409);
    assert.equal(replay.json().code, 'IDENTITY_FANOUT_TASK_NOT_FAILED');
    const unknown = await api('POST', '/api/identity/access-fanout-tasks/0190a000-0000-7000-8000-00000000dead/replay');
    assert.equal(unknown.statusCode, 404);

    // Runbook: a Failed (poison) task is replayed — Pending again, AttemptCount 0, its Cursor kept.
    await pool.query(`update identity.access_fanout_tasks set status = 'Failed', attempt_count = 5, last_error = 'boom' where id = $1`, [task.id]);
    const failed = await api('GET', '/api/identity/access-fanout-tasks?status=Failed');
    assert.deepEqual(failed.json().tasks.map((x: { id: string }) => x.id), [task.id]);
    const replayed = await api('POST', `/api/identity/access-fanout-tasks/${task.id}/replay`);
    assert.equal(replayed.statusCode, 200, replayed.body);
    assert.deepEqual([replayed.json().status, replayed.json().attemptCount, replayed.json().lastError], ['Pending', 0, null]);

    // Every alert input of seed 003 is on /metrics.
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, /^identity_access_fanout_queue_backlog [1-9]/m);
    for (const name of [
      'identity_access_fanout_task_duration_ms',
      'identity_access_fanout_users_total',
      'identity_access_fanout_errors_total',
      'identity_access_fanout_task_lag_seconds',
      'identity_access_fanout_size',
      'identity_access_fanout_tasks_failed',
      'identity_access_events_unpublished',
    ]) {
      assert.match(metrics, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
  });

  test('bad grants get clear errors and change nothing: unknown role or user, bad scope, duplicate, other company, past expiry', async () => {
    const user = await newUser();
    const role = await newRole('guarded');
    assert.equal((await grant(role, user)).statusCode, 201);
    const before = await counts();
    const cases: [Record<string, unknown>, number, string][] = [
      [{ roleId: '0190a000-0000-7000-8000-00000000dead', userId: user, scopeType: 'Platform' }, 404, 'IDENTITY_ROLE_NOT_FOUND'],
      [{ roleId: role, userId: '0190a000-0000-7000-8000-00000000dead', scopeType: 'Platform' }, 404, 'IDENTITY_USER_NOT_FOUND'],
      [{ roleId: role, userId: user, scopeType: 'Project' }, 400, 'IDENTITY_INVALID_SCOPE'],
      [{ roleId: role, userId: user, scopeType: 'Platform' }, 409, 'IDENTITY_ASSIGNMENT_DUPLICATE'],
      [{ roleId: role, userId: await newUser('0190a000-0000-7000-8000-0000000000c2'), scopeType: 'Platform' }, 409, 'IDENTITY_ROLE_COMPANY_MISMATCH'],
      [{ roleId: role, userId: user, scopeType: 'Organization', scopeOrganizationId: ORG, expiresAt: '2026-02-01T00:00:00Z' }, 400, 'IDENTITY_ASSIGNMENT_EXPIRES_IN_PAST'],
      [{ roleId: 'not-a-uuid', userId: user, scopeType: 'Platform' }, 400, 'VALIDATION_FAILED'],
    ];
    for (const [body, status, code] of cases) {
      const res = await api('POST', '/api/identity/role-assignments', body);
      assert.equal(res.statusCode, status, `${code}: ${res.body}`);
      assert.equal(res.json().code, code);
    }
    const unknownRole = await api('PUT', '/api/identity/roles/0190a000-0000-7000-8000-00000000dead/permissions', { permissions: [] });
    assert.equal(unknownRole.statusCode, 404);
    assert.equal(unknownRole.json().code, 'IDENTITY_ROLE_NOT_FOUND');
    const badPermission = await api('PUT', `/api/identity/roles/${role}/permissions`, { permissions: ['Not A Code'] });
    assert.equal(badPermission.statusCode, 400);
    const dupCode = await api('POST', '/api/identity/roles', { code: 'guarded', name: 'x', companyId: COMPANY, permissions: [] });
    assert.equal(dupCode.statusCode, 409);
    assert.equal(dupCode.json().code, 'IDENTITY_ROLE_CODE_TAKEN');
    assert.deepEqual(await counts(), before);
    const role2 = await api('GET', `/api/identity/roles/${role}`);
    assert.equal(role2.json().version, 1);
  });

  test('a non-admin token gets 403 on every identity endpoint and changes nothing', async () => {
    const role = await newRole('admins-only');
    const user = await newUser();
    const userHeaders = { authorization: `Bearer ${await t.token({ admin: false })}` };
    const before = await counts();
    const calls = [
      { method: 'POST' as const, url: '/api/identity/roles', payload: { code: 'x', name: 'x', permissions: [] } },
      { method: 'PUT' as const, url: `/api/identity/roles/${role}/permissions`, payload: { permissions: ['a.b'] } },
      { method: 'POST' as const, url: '/api/identity/role-assignments', payload: { roleId: role, userId: user, scopeType: 'Platform' } },
      { method: 'POST' as const, url: `/api/identity/roles/${role}/archive` },
      { method: 'GET' as const, url: `/api/identity/users/${user}/access` },
      { method: 'GET' as const, url: '/api/identity/access-fanout-tasks' },
    ];
    for (const c of calls) {
      const res = await t.app.inject({ ...c, headers: userHeaders });
      assert.equal(res.statusCode, 403, `${c.method} ${c.url}`);
    }
    assert.deepEqual(await counts(), before);
  });

  test('an assignment past ExpiresAt leaves every snapshot at once; the expiry worker marks it Expired and announces the user', async () => {
    const user = await newUser();
    const role = await newRole('temporary');
    const keep = await newRole('permanent');
    const temp = (await grant(role, user, { scopeType: 'Platform', expiresAt: '2026-03-01T10:00:00Z' })).json();
    await grant(keep, user);
    clock.set('2026-03-01T10:00:01Z');

    const access = (await api('GET', `/api/identity/users/${user}/access`)).json();
    assert.deepEqual(access.activeAssignments.map((a: { roleCode: string }) => a.roleCode), ['permanent']);

    const run = await t.app.platform.runner.runNow('identity-assignment-expiry');
    assert.equal(run.outcome, 'success', run.error);
    const expired = (await api('GET', `/api/identity/role-assignments/${temp.id}`)).json();
    assert.equal(expired.status, 'Expired');
    const events = await accessEvents(user);
    const last = events.at(-1)!.payload;
    assert.equal(last.ChangeReason, 'AssignmentExpired');
    assert.equal(last.Version, expired.version);
    assert.ok(last.Version > events.at(-2)!.payload.Version);
    assert.deepEqual(last.ActiveAssignments.map((a) => a.RoleCode), ['permanent']);

    // Nothing left to expire: another run announces nothing.
    const eventsBefore = (await accessEvents()).length;
    await t.app.platform.runner.runNow('identity-assignment-expiry');
    assert.equal((await accessEvents()).length, eventsBefore);
  });

  test('archiving a role revokes its assignments and announces each user (INV-R5); it takes no new grants', async () => {
    const role = await newRole('doomed');
    const other = await newRole('survivor');
    const users = [await newUser(), await newUser()];
    for (const u of users) {
      await grant(role, u);
      await grant(other, u);
    }
    const res = await api('POST', `/api/identity/roles/${role}/archive`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().role.status, 'Archived');
    assert.equal(res.json().revokedUsers, 2);
    for (const u of users) {
      const last = (await accessEvents(u)).at(-1)!.payload;
      assert.equal(last.ChangeReason, 'RoleArchived');
      assert.deepEqual(last.ActiveAssignments.map((a) => a.RoleCode), ['survivor']);
    }
    const { rows } = await pool.query(`select distinct status from identity.role_assignments where role_id = $1`, [role]);
    assert.deepEqual(rows.map((r) => r.status), ['Revoked']);
    const late = await grant(role, await newUser());
    assert.equal(late.statusCode, 409);
    assert.equal(late.json().code, 'IDENTITY_ROLE_ARCHIVED');
    const again = await api('POST', `/api/identity/roles/${role}/archive`);
    assert.equal(again.json().revokedUsers, 0);
  });
});
