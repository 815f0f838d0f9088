import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { ACQUIRE_SQL } from '../../../src/platform/jobs/lease-sql.ts';
import { signToken } from '../../../src/platform/http/auth.ts';
import { newId } from '../../../src/platform/time.ts';
import { messengerApp } from '../../modules/messenger/support/app.ts';
import { insertChat, insertOutbox, uid } from '../../modules/messenger/support/dispatch.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The console's API underneath: roles from the token (an admin token operates, ops_role viewer
 * reads only), job pause and resume stored for every replica, the overview, failures with filters,
 * a dry run that changes nothing, a bulk requeue at a bounded rate with its progress, and the audit.
 */

const m = await messengerApp({}, {}, { opsBulkChunk: 2, opsBulkPauseMs: 20, opsOverviewFloorMs: 0 });
const operator = await m.token({ admin: true });
const viewerId = newId();
const viewer = await signToken({ userId: viewerId, admin: false, opsRole: 'viewer' }, m.config.JWT_SECRET, { issuer: m.config.AUTH_ISSUER, audience: m.config.AUTH_AUDIENCE });
const chatId = await insertChat(m.pool, [uid()]);

async function quarantined(lastError = 'PUSH_TIMEOUT: hub did not answer'): Promise<string> {
  const id = await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined', attempts: 8 });
  await m.pool.query(`update push.realtime_outbox set last_error = $2 where id = $1`, [id, lastError]);
  return id;
}

test('roles: a viewer reads the overview but every action is 403 OPS_READ_ONLY; a token without a role is 403 AUTH_FORBIDDEN', async () => {
  assert.equal((await m.call(viewer, 'GET', '/api/ops/overview')).status, 200);
  for (const [method, url, body] of [
    ['POST', '/api/ops/jobs/messenger-realtime-dispatch/pause', undefined],
    ['POST', '/api/ops/jobs/messenger-realtime-dispatch/run', undefined],
    ['POST', '/api/ops/failures/realtime-quarantined/actions', { action: 'requeue' }],
  ] as const) {
    const res = await m.call<{ code: string }>(viewer, method, url, body);
    assert.deepEqual([res.status, res.body.code], [403, 'OPS_READ_ONLY'], url);
  }
  const user = await m.token();
  assert.equal((await m.call<{ code: string }>(user, 'GET', '/api/ops/overview')).body.code, 'AUTH_FORBIDDEN');
  // The viewer role opens no admin route elsewhere.
  assert.equal((await m.call(viewer, 'GET', '/api/messenger/admin/realtime-outbox/quarantined')).status, 403);
});

test('pause is stored for every replica with its reason and expected end: a paused job is skipped by run-now until resumed; both are audited', async () => {
  const job = 'messenger-realtime-dispatch';
  const until = new Date(m.clock.now().getTime() + 30 * 60_000).toISOString();
  const paused = await m.call(operator, 'POST', `/api/ops/jobs/${job}/pause`, { reason: 'Redis failover drill', until });
  assert.deepEqual(paused.body, { name: job, paused: true, reason: 'Redis failover drill', until });
  const { rows } = await m.pool.query(`select paused_by, pause_reason, pause_until from platform.job_state where name = $1`, [job]);
  assert.ok(rows[0].paused_by);
  assert.deepEqual([rows[0].pause_reason, rows[0].pause_until.toISOString()], ['Redis failover drill', until]);
  const skipped = await m.call<{ outcome: string; skipReason: string }>(operator, 'POST', `/api/ops/jobs/${job}/run`);
  assert.deepEqual([skipped.body.outcome, skipped.body.skipReason], ['skipped', 'paused']);
  const jobs = (await m.call<{ jobs: { name: string; pausedAt: string | null; pauseReason: string; pauseUntil: string }[] }>(viewer, 'GET', '/api/ops/jobs')).body.jobs;
  const listed = jobs.find((j) => j.name === job)!;
  assert.ok(listed.pausedAt);
  assert.deepEqual([listed.pauseReason, listed.pauseUntil], ['Redis failover drill', until]);
  await m.call(operator, 'POST', `/api/ops/jobs/${job}/resume`);
  assert.equal((await m.call<{ outcome: string }>(operator, 'POST', `/api/ops/jobs/${job}/run`)).body.outcome, 'success');
  const audit = (await m.call<{ items: { action: string; target: string; filter: Record<string, unknown> }[] }>(viewer, 'GET', '/api/ops/audit')).body.items;
  assert.deepEqual(audit.slice(0, 4).map((a) => a.action), ['run', 'resume', 'run', 'pause']);
  assert.deepEqual(audit[3]!.filter, { reason: 'Redis failover drill', until });
  assert.equal((await m.call<{ code: string }>(operator, 'POST', '/api/ops/jobs/no-such-job/pause', { reason: 'x' })).body.code, 'JOB_NOT_FOUND');
});

test('a pause needs a reason, and an expected end in the future', async () => {
  const url = '/api/ops/jobs/messenger-realtime-dispatch/pause';
  assert.equal((await m.call<{ code: string }>(operator, 'POST', url, {})).body.code, 'VALIDATION_FAILED');
  assert.equal((await m.call<{ code: string }>(operator, 'POST', url, { reason: '   ' })).body.code, 'VALIDATION_FAILED');
  const past = new Date(m.clock.now().getTime() - 1000).toISOString();
  assert.equal((await m.call<{ code: string }>(operator, 'POST', url, { reason: 'drill', until: past })).body.code, 'OPS_INVALID_PAUSE');
  assert.equal((await m.pool.query(`select 1 from platform.job_state where name = 'messenger-realtime-dispatch' and paused_at is not null`)).rowCount, 0);
});

test('a paused job\'s alert carries the pause in its annotations (a planned pause told from an outage); once resumed it does not', async () => {
  const job = 'messenger-realtime-dispatch';
  const until = new Date(m.clock.now().getTime() + 20 * 60_000).toISOString();
  type Alerts = { alerts: { alert: string; annotations: Record<string, string> }[] };
  const notRunning = async () => {
    const o = (await m.call<{ alerts: Alerts }>(viewer, 'GET', '/api/ops/overview')).body.alerts;
    const direct = (await m.call<Alerts>(viewer, 'GET', '/api/ops/alerts')).body;
    const find = (v: Alerts) => v.alerts.find((a) => a.alert === 'MessengerRealtimeDispatchNotRunning')!;
    return [find(o).annotations, find(direct).annotations];
  };
  await m.call(operator, 'POST', `/api/ops/jobs/${job}/pause`, { reason: 'Redis failover drill', until });
  for (const annotations of await notRunning()) {
    assert.equal(annotations.pause_reason, 'Redis failover drill');
    assert.equal(annotations.pause_until, until);
    assert.match(annotations.pause!, new RegExp(`^planned pause of ${job} by \\S+ since .+: Redis failover drill; expected end ${until}$`));
  }
  // An alert the pause does not explain (Quarantined rows) stays as it is.
  await quarantined();
  const o = (await m.call<{ alerts: Alerts }>(viewer, 'GET', '/api/ops/overview')).body.alerts;
  assert.deepEqual(o.alerts.find((a) => a.alert === 'MessengerRealtimeQuarantined')!.annotations, {});
  await m.call(operator, 'POST', `/api/ops/jobs/${job}/resume`);
  assert.deepEqual(await notRunning(), [{}, {}]);
});

test('overview: jobs with recent runs, backlogs, replicas, dependencies and the alerts that would fire now', async () => {
  await m.pool.query(`delete from push.realtime_outbox`);
  await quarantined();
  await m.app.platform.runner.runNow('messenger-realtime-dispatch');
  const o = (await m.call<{
    jobs: { name: string; recentRuns: unknown[] }[];
    backlogs: { metric: string; series: { value: number }[] }[];
    dependencies: Record<string, string>;
    replicas: unknown[];
    alerts: { alerts: { alert: string; state: string }[]; errors: unknown[] };
  }>(viewer, 'GET', '/api/ops/overview')).body;
  assert.ok(o.jobs.some((j) => j.name === 'messenger-realtime-dispatch'));
  assert.equal(o.backlogs.find((b) => b.metric === 'messenger_realtime_quarantined')!.series[0]!.value, 1);
  assert.equal(o.dependencies.database, 'ok');
  assert.equal(o.replicas.length, 1);
  assert.deepEqual(o.alerts.errors, [], 'every rule of deploy/prometheus evaluates');
  assert.ok(o.alerts.alerts.some((a) => a.alert === 'MessengerRealtimeQuarantined' && a.state === 'firing'));
});

test('leases tell the truth: a run that ended shows its lease released although the row\'s expiry is ahead; a held lock is held; one whose holder stopped renewing is expired', async () => {
  const job = 'messenger-realtime-dispatch';
  type Lease = { state: string; holder: string; expiresAt: string; asOf: string };
  const jobOf = async () => (await m.call<{ jobs: { name: string; lockKey: string; lease: Lease | null }[] }>(viewer, 'GET', '/api/ops/jobs')).body.jobs.find((j) => j.name === job)!;
  assert.equal((await m.app.platform.runner.runNow(job)).outcome, 'success');
  const ended = (await jobOf()).lease!;
  assert.equal(ended.state, 'released');
  assert.ok(new Date(ended.expiresAt) > new Date(ended.asOf), 'the row alone still reads as a lease running for minutes');

  // Another session takes the lock with its lease, as a replica's run would.
  const key = (await jobOf()).lockKey;
  const session = new pg.Client({ connectionString: m.database.url });
  await session.connect();
  try {
    assert.equal((await session.query(ACQUIRE_SQL, [key, 'replica-b', 60_000])).rows[0].locked, true);
    const held = (await jobOf()).lease!;
    assert.deepEqual([held.state, held.holder], ['held', 'replica-b']);
    // Its holder stops renewing: the lock is still held, the lease has run out.
    await m.pool.query(`update platform.job_leases set expires_at = clock_timestamp() - interval '1 second' where name = $1`, [key]);
    assert.equal((await jobOf()).lease!.state, 'expired');
  } finally {
    await session.end();
  }
  // Its session is gone, and the lock with it.
  await waitFor('the ended session\'s lock to be released', async () => (await jobOf()).lease!.state === 'released');
});

test('failures: filters, a dry run that changes nothing, then a bulk requeue at a bounded rate with its progress and audit', async () => {
  await m.pool.query(`delete from push.realtime_outbox`);
  const timeouts = [await quarantined(), await quarantined(), await quarantined(), await quarantined(), await quarantined()];
  const other = await quarantined('REF_NOT_FOUND: gone');
  const kinds = (await m.call<{ kinds: { kind: string; count: number }[] }>(viewer, 'GET', '/api/ops/failures')).body.kinds;
  assert.deepEqual(kinds.find((k) => k.kind === 'realtime-quarantined')?.count, 6);
  const list = await m.call<{ total: number; items: { id: string }[] }>(viewer, 'GET', '/api/ops/failures/realtime-quarantined?errorCode=PUSH_TIMEOUT');
  assert.deepEqual([list.body.total, list.body.items.map((i) => i.id).sort()], [5, [...timeouts].sort()]);
  const byChat = await m.call<{ total: number }>(viewer, 'GET', `/api/ops/failures/realtime-quarantined?field=chatId&value=${chatId}`);
  assert.equal(byChat.body.total, 6);
  for (const q of ['field=nope&value=1', 'field=chatId', 'from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z']) {
    assert.equal((await m.call<{ code: string }>(viewer, 'GET', `/api/ops/failures/realtime-quarantined?${q}`)).body.code, 'OPS_INVALID_FILTER', q);
  }
  assert.equal((await m.call<{ code: string }>(viewer, 'GET', '/api/ops/failures/nope')).body.code, 'OPS_FAILURE_KIND_NOT_FOUND');
  assert.equal((await m.call<{ code: string }>(operator, 'POST', '/api/ops/failures/realtime-quarantined/actions', { action: 'retry' })).body.code, 'OPS_ACTION_NOT_SUPPORTED');

  const filter = { errorCode: 'PUSH_TIMEOUT' };
  const dry = await m.call<{ matched: number; wouldChange: number; sample: unknown[] }>(operator, 'POST', '/api/ops/failures/realtime-quarantined/actions', { action: 'requeue', filter });
  assert.deepEqual([dry.status, dry.body.matched, dry.body.wouldChange, dry.body.sample.length], [200, 5, 5, 5]);
  assert.equal((await m.pool.query(`select count(*)::int as n from push.realtime_outbox where status = 'Quarantined'`)).rows[0].n, 6, 'a dry run changes nothing');

  const run = await m.call<{ auditId: string; matched: number }>(operator, 'POST', '/api/ops/failures/realtime-quarantined/actions', { action: 'requeue', filter, dryRun: false });
  assert.deepEqual([run.status, run.body.matched], [202, 5]);
  let done = { status: '', changed: 0 };
  await waitFor('the bulk requeue to finish', async () => {
    done = (await m.call<{ status: string; changed: number }>(viewer, 'GET', `/api/ops/audit/${run.body.auditId}`)).body;
    return done.status === 'done';
  });
  assert.equal(done.changed, 5);
  const { rows } = await m.pool.query<{ id: string }>(`select id from push.realtime_outbox where status = 'Quarantined'`);
  assert.deepEqual(rows.map((r) => r.id), [other]);
  const audit = (await m.call<{ items: { action: string; dryRun: boolean; matched: number; changed: number; filter: object; actor: string; role: string }[] }>(viewer, 'GET', '/api/ops/audit')).body.items;
  assert.deepEqual(
    audit.slice(0, 2).map((a) => [a.action, a.dryRun, a.matched, a.changed, a.role]),
    [['requeue', false, 5, 5, 'operator'], ['requeue', true, 5, 0, 'operator']],
  );
  assert.deepEqual((audit[0]!.filter as { errorCode: string }).errorCode, 'PUSH_TIMEOUT');
});

test('the console page is served with a strict CSP and no inline script', async () => {
  const page = await m.app.inject('/ops');
  assert.equal(page.statusCode, 200);
  const csp = page.headers['content-security-policy'] as string;
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.doesNotMatch(page.body, /<script>(?!<)|<script(?![^>]*\bsrc=)[^>]*>/);
  assert.equal((await m.app.inject('/ops/runbooks/MessengerRealtimeQuarantined')).statusCode, 200);
  assert.equal((await m.app.inject('/ops/runbooks/..%2Fsecurity')).statusCode, 404);
});
