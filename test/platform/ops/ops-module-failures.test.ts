import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectOptions } from 'fastify';
import { signToken } from '../../../src/platform/http/auth.ts';
import { ManualClock, newId } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';
import { waitFor } from '../../support/wait.ts';
import { seedRole } from '../../modules/identity/support.ts';

/**
 * The failure kinds and backlogs the modules register with the ops console (ModuleParts.opsFailures,
 * opsBacklogs), on the whole app and the real database: terminal Failed notifications (retry = the
 * runbook's reprocess, in a new DeliveryCycle) and Failed access fan-out tasks (retry = the
 * runbook's replay). For each: the list and its filters, a dry run that changes nothing, the bulk
 * action at a bounded rate with its progress and audit, and the backlog gauges on the overview.
 */

const T0 = new Date('2026-11-02T10:00:00.000Z');
const clock = new ManualClock(T0);
const t = await buildTestApp({}, { clock, tuning: { opsBulkChunk: 2, opsBulkPauseMs: 20, opsOverviewFloorMs: 0 } });
const pool = t.database.pool;
const operator = await t.token({ admin: true });
const viewer = await signToken({ userId: newId(), admin: false, opsRole: 'viewer' }, t.config.JWT_SECRET, { issuer: t.config.AUTH_ISSUER, audience: t.config.AUTH_AUDIENCE });

async function call<T>(token: string, method: InjectOptions['method'], url: string, payload?: object): Promise<{ status: number; body: T }> {
  const res = await t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload }) });
  return { status: res.statusCode, body: res.json() as T };
}

type Listed = { total: number; items: { id: string; errorCode: string | null; fields: Record<string, unknown> }[]; kind: { actions: string[]; runbook: string } };
type DryRun = { matched: number; wouldChange: number; sample: { id: string }[] };

/** Starts a bulk action for real and waits for its audit row to say done; the rows it changed. */
async function runToEnd(kind: string, body: object): Promise<number> {
  const run = await call<{ auditId: string }>(operator, 'POST', `/api/ops/failures/${kind}/actions`, { ...body, dryRun: false });
  assert.equal(run.status, 202);
  let entry = { status: '', changed: 0, role: '' };
  await waitFor(`the bulk action on ${kind} to finish`, async () => {
    entry = (await call<typeof entry>(viewer, 'GET', `/api/ops/audit/${run.body.auditId}`)).body;
    return entry.status === 'done';
  });
  assert.equal(entry.role, 'operator');
  return entry.changed;
}

async function terminalNotification(o: { channel: string; code: string; failedAt: Date; userId?: string; correlationId?: string }): Promise<string> {
  const id = newId();
  await pool.query(
    `insert into notifications.notifications
       (id, recipient_user_id, channel, recipient_address, title, body, status, attempts, last_error, terminal, correlation_id, created_at, updated_at)
     values ($1, $2, $3, '+79991234567', 'Price changed', 'cheaper now', 'Failed', 5, $4, true, $5, $6, $6)`,
    [id, o.userId ?? newId(), o.channel, o.code, o.correlationId ?? null, o.failedAt],
  );
  return id;
}

const at = (minutes: number) => new Date(T0.getTime() - minutes * 60_000);

test('notifications-terminal: list with filters, dry run, bulk retry in a new DeliveryCycle; the unsent backlog by status', async () => {
  const user = newId();
  const sms = [
    await terminalNotification({ channel: 'Sms', code: 'NTF_PROVIDER_TRANSIENT', failedAt: at(30), userId: user }),
    await terminalNotification({ channel: 'Sms', code: 'NTF_PROVIDER_TRANSIENT', failedAt: at(20), correlationId: 'corr-1' }),
    await terminalNotification({ channel: 'Sms', code: 'NTF_PROVIDER_TRANSIENT', failedAt: at(10) }),
  ];
  const email = await terminalNotification({ channel: 'Email', code: 'NTF_PROVIDER_REJECTED', failedAt: at(5), userId: user });
  const kind = 'notifications-terminal';

  const kinds = (await call<{ kinds: { kind: string; count: number; actions: string[] }[] }>(viewer, 'GET', '/api/ops/failures')).body.kinds;
  assert.deepEqual(kinds.find((k) => k.kind === kind), { ...kinds.find((k) => k.kind === kind), count: 4, actions: ['retry'] });
  assert.ok(!kinds.some((k) => k.kind === 'consumer-dead-letters'), 'no dead letters kind on the in-process bus: nothing is kept to read');
  const all = (await call<Listed>(viewer, 'GET', `/api/ops/failures/${kind}`)).body;
  assert.deepEqual(all.items.map((i) => i.id), [...sms, email], 'oldest failure first');
  assert.equal(all.kind.runbook, '/ops/runbooks/NotificationsTerminalFailures');
  for (const [q, expected] of [
    ['errorCode=NTF_PROVIDER_TRANSIENT', sms],
    ['field=channel&value=Email', [email]],
    [`field=recipientUserId&value=${user}`, [sms[0], email]],
    ['field=correlationId&value=corr-1', [sms[1]]],
    [`from=${at(25).toISOString()}&to=${at(6).toISOString()}`, sms.slice(1)],
  ] as const) {
    const list = (await call<Listed>(viewer, 'GET', `/api/ops/failures/${kind}?${q}`)).body;
    assert.deepEqual([list.total, list.items.map((i) => i.id)], [expected.length, expected], q);
  }
  for (const q of ['field=channel&value=Pigeon', 'field=recipientUserId&value=nope', 'field=title&value=x']) {
    const res = await call<{ code: string }>(viewer, 'GET', `/api/ops/failures/${kind}?${q}`);
    assert.deepEqual([res.status, res.body.code], [400, 'OPS_INVALID_FILTER'], q);
  }
  assert.equal((await call<{ code: string }>(operator, 'POST', `/api/ops/failures/${kind}/actions`, { action: 'discard' })).body.code, 'OPS_ACTION_NOT_SUPPORTED');

  const filter = { errorCode: 'NTF_PROVIDER_TRANSIENT', field: 'channel', value: 'Sms' };
  const dry = await call<DryRun>(operator, 'POST', `/api/ops/failures/${kind}/actions`, { action: 'retry', filter });
  assert.deepEqual([dry.status, dry.body.matched, dry.body.wouldChange, dry.body.sample.map((s) => s.id)], [200, 3, 3, sms]);
  const terminal = async () => (await pool.query<{ id: string }>(`select id from notifications.notifications where terminal order by id`)).rows.map((r) => r.id);
  assert.equal((await terminal()).length, 4, 'a dry run changes nothing');

  assert.equal(await runToEnd(kind, { action: 'retry', filter }), 3);
  assert.deepEqual(await terminal(), [email]);
  const { rows } = await pool.query(`select status, attempts, delivery_cycle as cycle, next_attempt_at as due from notifications.notifications where id = any($1::uuid[])`, [sms]);
  assert.deepEqual(rows.map((r) => [r.status, r.attempts, r.cycle, r.due.getTime()]), sms.map(() => ['Failed', 0, 2, T0.getTime()]), 'back to the retry worker in a new cycle, due now');
  const frames = await pool.query(`select count(*)::int as n from push.realtime_outbox where kind = 'NotificationStatusChanged' and payload->>'NotificationId' = any($1::text[])`, [sms]);
  assert.equal(frames.rows[0].n, 3, 'each reopen is announced (NotificationStatusChanged), as the runbook call does');

  const overview = (await call<{ backlogs: { metric: string; series: { labels: Record<string, string>; value: number }[] }[] }>(viewer, 'GET', '/api/ops/overview')).body;
  const unsent = overview.backlogs.find((b) => b.metric === 'notifications_unsent')!.series;
  assert.deepEqual(
    unsent.map((s) => [s.labels.status, s.labels.terminal, s.value]).sort(),
    [['Failed', 'false', 3], ['Failed', 'true', 1], ['Pending', 'false', 0]],
  );
});

async function failedTask(roleId: string, o: { failedAt: Date; error: string; companyId?: string }): Promise<string> {
  const id = newId();
  await pool.query(
    `insert into identity.access_fanout_tasks (id, role_id, company_id, role_version, reason, status, cursor, attempt_count, last_error, created_at, updated_at)
     values ($1, $2, $3, 2, 'RolePermissionsChanged', 'Failed', $4, 5, $5, $6, $6)`,
    [id, roleId, o.companyId ?? null, newId(), o.error, o.failedAt],
  );
  return id;
}

test('identity-fanout-failed: list with filters, dry run, bulk retry (replay from Cursor); the fan-out backlogs', async () => {
  const role = await seedRole(pool);
  const other = await seedRole(pool);
  const company = newId();
  const tasks = [
    await failedTask(role, { failedAt: at(30), error: 'PgError: deadlock detected (max attempts reached)' }),
    await failedTask(role, { failedAt: at(20), error: 'PgError: deadlock detected', companyId: company }),
    await failedTask(role, { failedAt: at(10), error: 'lease expired (max attempts reached)' }),
  ];
  const elsewhere = await failedTask(other, { failedAt: at(5), error: 'PgError: deadlock detected' });
  const kind = 'identity-fanout-failed';

  const all = (await call<Listed>(viewer, 'GET', `/api/ops/failures/${kind}`)).body;
  assert.deepEqual([all.items.map((i) => i.id), all.kind.actions, all.kind.runbook], [[...tasks, elsewhere], ['retry'], '/ops/runbooks/IdentityAccessFanoutTasksFailed']);
  assert.equal(all.items[0]!.errorCode, 'PgError');
  for (const [q, expected] of [
    ['errorCode=PgError', [tasks[0], tasks[1], elsewhere]],
    [`field=roleId&value=${role}`, tasks],
    [`field=companyId&value=${company}`, [tasks[1]]],
    [`from=${at(15).toISOString()}`, [tasks[2], elsewhere]],
  ] as const) {
    const list = (await call<Listed>(viewer, 'GET', `/api/ops/failures/${kind}?${q}`)).body;
    assert.deepEqual([list.total, list.items.map((i) => i.id)], [expected.length, expected], q);
  }
  assert.equal((await call<{ code: string }>(viewer, 'GET', `/api/ops/failures/${kind}?field=roleId&value=x`)).body.code, 'OPS_INVALID_FILTER');
  assert.equal((await call<{ code: string }>(operator, 'POST', `/api/ops/failures/${kind}/actions`, { action: 'requeue' })).body.code, 'OPS_ACTION_NOT_SUPPORTED');

  const filter = { field: 'roleId', value: role };
  const dry = await call<DryRun>(operator, 'POST', `/api/ops/failures/${kind}/actions`, { action: 'retry', filter, max: 2 });
  assert.deepEqual([dry.body.matched, dry.body.wouldChange, dry.body.sample.map((s) => s.id)], [3, 2, tasks.slice(0, 2)]);
  const failed = async () => (await pool.query<{ id: string }>(`select id from identity.access_fanout_tasks where status = 'Failed' order by id`)).rows.map((r) => r.id);
  assert.equal((await failed()).length, 4, 'a dry run changes nothing');

  const overview = async () =>
    (await call<{ backlogs: { metric: string; series: { value: number }[] }[] }>(viewer, 'GET', '/api/ops/overview')).body.backlogs;
  assert.equal((await overview()).find((b) => b.metric === 'identity_access_fanout_tasks_failed')!.series[0]!.value, 4);

  assert.equal(await runToEnd(kind, { action: 'retry', filter }), 3);
  assert.deepEqual(await failed(), [elsewhere]);
  const { rows } = await pool.query(`select status, attempt_count as attempts, last_error as error, cursor from identity.access_fanout_tasks where id = any($1::uuid[])`, [tasks]);
  assert.ok(rows.every((r) => r.status === 'Pending' && r.attempts === 0 && r.error === null && r.cursor), 'replayed: Pending, AttemptCount 0, Cursor kept');
  const backlogs = await overview();
  assert.equal(backlogs.find((b) => b.metric === 'identity_access_fanout_queue_backlog')!.series[0]!.value, 3);
  assert.equal(backlogs.find((b) => b.metric === 'identity_access_fanout_tasks_failed')!.series[0]!.value, 1);
});
