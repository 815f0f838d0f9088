import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectOptions } from 'fastify';
import { signToken } from '../../../src/platform/http/auth.ts';
import { summaryOf } from '../../../src/platform/http/admin-audit.ts';
import { newId } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';

/**
 * The admin audit hook (src/platform/http/admin-audit.ts) on the whole app: the runbook calls that
 * act are written to platform.ops_audit with who, what and the answer, done or failed; reads are
 * not; every 403 of an authenticated caller on an admin or ops route is written as refused, whoever
 * refused it (the token's rights, the ops role, identity's check of the admin); a 401 names no one;
 * the ops routes that write their own row get no second one; secrets in a body are not kept.
 */

const t = await buildTestApp();
const pool = t.database.pool;
const adminId = newId();
const admin = await t.token({ userId: adminId, admin: true });
const viewerId = newId();
const viewer = await signToken({ userId: viewerId, admin: false, opsRole: 'viewer' }, t.config.JWT_SECRET, { issuer: t.config.AUTH_ISSUER, audience: t.config.AUTH_AUDIENCE });

interface Row {
  actor: string;
  role: string;
  action: string;
  target: string;
  filter: Record<string, unknown>;
  dry_run: boolean;
  status: string;
  http_status: number | null;
  error: string | null;
}

async function call(token: string | undefined, method: InjectOptions['method'], url: string, payload?: unknown): Promise<{ status: number; code?: string }> {
  const res = await t.app.inject({ method, url, ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}), ...(payload === undefined ? {} : { payload: payload as object }) });
  return { status: res.statusCode, ...(res.statusCode >= 400 ? { code: (res.json() as { code: string }).code } : {}) };
}

/** The rows written for one path since the test began (the hook writes before the answer is sent). */
async function rowsFor(target: string): Promise<Row[]> {
  return (await pool.query<Row>(`select actor, role, action, target, filter, dry_run, status, http_status, error from platform.ops_audit where target = $1 order by at, id`, [target])).rows;
}

test('the runbook calls that act are audited with actor, action, params and answer, done or failed; a read is not', async () => {
  const requeue = '/api/messenger/admin/realtime-outbox/requeue-quarantined';
  assert.equal((await call(admin, 'POST', requeue, { kind: 'MessageReceived' })).status, 200, 'a real run by default: the params kept say so');
  const [row] = await rowsFor(requeue);
  assert.deepEqual(
    [row?.actor, row?.role, row?.action, row?.status, row?.http_status, row?.dry_run, row?.filter],
    [adminId, 'operator', 'requeueQuarantinedRealtimeRows', 'done', 200, false, { body: { kind: 'MessageReceived', dryRun: false, limit: 100 } }],
  );
  assert.equal((await call(admin, 'POST', requeue, { dryRun: true })).status, 200);
  assert.equal((await rowsFor(requeue))[1]?.dry_run, true);

  const channel = '/api/notifications/channels/Email';
  const config = { isEnabled: false, providerKey: 'smtp', maxAttempts: 3, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } };
  assert.equal((await call(admin, 'PUT', channel, config)).status, 200);
  assert.deepEqual((await rowsFor(channel)).map((r) => [r.action, r.status, r.http_status]), [['setNotificationChannel', 'done', 200]]);

  const missing = newId();
  for (const [url, action, answer] of [
    [`/api/notifications/terminal-failures/${missing}/reprocess`, 'reprocessTerminalFailure', 404],
    [`/api/identity/access-fanout-tasks/${missing}/replay`, 'replayAccessFanoutTask', 404],
    ['/api/messenger/admin/user-replica/resync', 'resyncUserReplica', 409],
  ] as const) {
    const res = await call(admin, 'POST', url, url.endsWith('resync') ? {} : undefined);
    assert.equal(res.status, answer, url);
    const rows = await rowsFor(url);
    assert.deepEqual(rows.map((r) => [r.action, r.status, r.http_status]), [[action, 'failed', answer]], url);
    assert.ok(rows[0]!.error!.startsWith(`${res.code}: `), `${url}: ${rows[0]!.error}`);
  }

  const list = '/api/messenger/admin/realtime-outbox/quarantined';
  assert.equal((await call(admin, 'GET', list)).status, 200);
  assert.deepEqual(await rowsFor(list), [], 'a read is not an action');
});

test('refusals are audited as refused with their code: a viewer acting, a user on an admin route, an admin identity knows as Blocked; a 401 is not', async () => {
  const pause = '/api/ops/jobs/messenger-realtime-dispatch/pause';
  assert.equal((await call(viewer, 'POST', pause)).code, 'OPS_READ_ONLY');
  const requeue = `/api/messenger/admin/realtime-outbox/${newId()}/requeue`;
  assert.equal((await call(viewer, 'POST', requeue)).code, 'AUTH_FORBIDDEN');
  const userId = newId();
  const user = await t.token({ userId });
  const read = `/api/identity/users/${newId()}`;
  assert.equal((await call(user, 'GET', read)).code, 'AUTH_FORBIDDEN');

  const blockedId = newId();
  await pool.query(
    `insert into identity.users (id, first_name, last_name, phone_number, type, status, version, created_at, updated_at)
     values ($1, 'Анна', 'Смирнова', $2, 'Investor', 'Blocked', 1, now(), now())`,
    [blockedId, `+7926${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`],
  );
  const blocked = await t.token({ userId: blockedId, admin: true });
  assert.equal((await call(blocked, 'GET', '/api/ops/audit')).code, 'IDENTITY_ADMIN_INACTIVE');

  const refused = async (target: string) => (await rowsFor(target)).map((r) => [r.actor, r.status, r.http_status, r.error!.split(':')[0]]);
  assert.deepEqual(await refused(pause), [[viewerId, 'refused', 403, 'OPS_READ_ONLY']]);
  assert.deepEqual(await refused(requeue), [[viewerId, 'refused', 403, 'AUTH_FORBIDDEN']]);
  assert.deepEqual(await refused(read), [[userId, 'refused', 403, 'AUTH_FORBIDDEN']], 'a refused read is written too');
  assert.deepEqual(await refused('/api/ops/audit'), [[blockedId, 'refused', 403, 'IDENTITY_ADMIN_INACTIVE']]);

  const anonymous = `/api/identity/users/${newId()}`;
  assert.equal((await call(undefined, 'GET', anonymous)).status, 401);
  assert.deepEqual(await rowsFor(anonymous), [], 'a 401 names no one');
});

test('a refused body carrying U+0000 (which PostgreSQL stores in no text) is still audited, each NUL shown as ␀', async () => {
  const url = '/api/ops/failures/realtime-quarantined/actions';
  const res = await call(admin, 'POST', url, { action: 'requeue', filter: { errorCode: 'A\u0000B', ['k\u0000']: 1 } });
  assert.equal(res.status, 400);
  const rows = await rowsFor(url);
  assert.equal(rows.length, 1, 'the row is written');
  assert.deepEqual([rows[0]!.status, rows[0]!.http_status, (rows[0]!.filter.body as { filter: Record<string, unknown> }).filter], ['failed', 400, { errorCode: 'A␀B', 'k␀': 1 }]);
});

test('an ops route that writes its own row (with its counts) gets no second one from the hook', async () => {
  const resume = '/api/ops/jobs/messenger-realtime-dispatch/resume';
  assert.equal((await call(admin, 'POST', resume)).status, 200);
  const { rows } = await pool.query<{ action: string; http_status: number }>(
    `select action, http_status from platform.ops_audit where actor = $1 and (target = 'job:messenger-realtime-dispatch' or target = $2)`,
    [adminId, resume],
  );
  assert.deepEqual(rows, [{ action: 'resume', http_status: 200 }]);
});

test('the params kept: secret-named fields redacted at any depth, long text and long lists cut', () => {
  const kept = summaryOf({ providerKey: 'smtp', token: 'abc', nested: { clientSecret: 's', password: 'p', keep: 'x'.repeat(300) }, ids: Array.from({ length: 25 }, (_, i) => i) }) as Record<string, unknown>;
  assert.equal(kept.token, '[redacted]');
  assert.equal(kept.providerKey, 'smtp');
  const nested = kept.nested as Record<string, string>;
  assert.deepEqual([nested.clientSecret, nested.password, nested.keep!.length], ['[redacted]', '[redacted]', 201]);
  assert.deepEqual((kept.ids as unknown[]).slice(-1), ['…5 more']);
});

test("a user's token probing admin routes is written once a minute, not once a call: admin routes carry no rate limit", async () => {
  const userId = newId();
  const user = await t.token({ userId });
  for (let i = 0; i < 5; i++) assert.equal((await call(user, 'POST', `/api/identity/access-fanout-tasks/${newId()}/replay`)).code, 'AUTH_FORBIDDEN');
  const { rows } = await pool.query(`select 1 from platform.ops_audit where actor = $1`, [userId]);
  assert.equal(rows.length, 1);
  // A viewer's refusals are each written: the role is the console's, its every refused act is news.
  for (let i = 0; i < 3; i++) await call(viewer, 'POST', `/api/ops/jobs/outbox-cleanup/resume`);
  assert.equal((await rowsFor('/api/ops/jobs/outbox-cleanup/resume')).length, 3);
});
