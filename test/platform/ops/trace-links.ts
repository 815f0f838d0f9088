import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { insertSubTasks, getTask } from '../../../src/modules/identity/access-fanout/fanout-sql.ts';
import { newId } from '../../../src/platform/time.ts';
import { buildTestApp, type TestApp } from '../../support/app.ts';
import { seedAssignments, seedRole, seedUsers } from '../../modules/identity/support.ts';
import { insertReplicaUser } from '../../modules/messenger/support/app.ts';

/**
 * The ops console's trace links of the failure kinds whose rows live in the database: rows written
 * by real requests over HTTP (each request carrying a traceparent of its own, which the server's
 * span continues when tracing is on), then failed the way the jobs leave them, and read back through
 * GET /api/ops/failures/<kind>. Shared by the file that turns tracing on
 * (ops-trace-links.traces.test.ts) and the one that leaves it off (ops-trace-links.test.ts).
 */

export const TRACE_URL = 'https://traces.example.org/trace/{traceId}';

export interface Listed {
  id: string;
  traceId: string | null;
  traceUrl: string | null;
}

export interface TraceWorld extends TestApp {
  /** An HTTP request under a trace of its own: `trace` is the trace id its traceparent header names. */
  request<T>(method: string, path: string, token: string, body?: unknown): Promise<{ body: T; trace: string }>;
  /** GET /api/ops/failures/<kind> as an operator: every row. */
  listed(kind: string): Promise<Listed[]>;
}

/** The whole app, listening (the HTTP instrumentation traces real requests, not injected ones), with OPS_TRACE_URL set. */
export async function traceWorld(): Promise<TraceWorld> {
  // Threshold 0: every role change with a user queues a fan-out task.
  // Eight sends at once by one user make a batch: the per-user bound on requests in progress is off.
  const t = await buildTestApp({ OPS_TRACE_URL: TRACE_URL, IDENTITY_INLINE_FANOUT_THRESHOLD: '0', HTTP_MAX_CONCURRENT_REQUESTS_PER_USER: '0' });
  const base = await t.app.listen({ host: '127.0.0.1', port: 0 });
  const operator = await t.token({ admin: true });
  return {
    ...t,
    async request<T>(method: string, path: string, token: string, body?: unknown) {
      const trace = randomBytes(16).toString('hex');
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          traceparent: `00-${trace}-${randomBytes(8).toString('hex')}-01`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
      return { body: (await res.json()) as T, trace };
    },
    async listed(kind: string) {
      const res = await t.app.inject({ method: 'GET', url: `/api/ops/failures/${kind}?limit=500`, headers: { authorization: `Bearer ${operator}` } });
      assert.equal(res.statusCode, 200, res.body);
      return (res.json() as { items: Listed[] }).items;
    },
  };
}

/** Each written row's id → the trace of the request that wrote it. */
export type Written = Map<string, string>;

/**
 * Realtime rows from every writer the console can meet: a chat's creation (enqueueRealtime), a
 * message sent alone and eight sent at once (the send queue batches those into one statement, each
 * with its own request's traceparent), and a notification's mark-read (a carried frame); then each
 * is Quarantined, as the dispatcher leaves a row it gave up on.
 */
export async function quarantinedRealtimeRows(w: TraceWorld): Promise<Written> {
  const pool = w.database.pool;
  const alice = await insertReplicaUser(pool);
  const bob = await insertReplicaUser(pool);
  const asAlice = await w.token({ userId: alice.id });
  const chat = await w.request<{ id: string }>('POST', '/api/messenger/chats', asAlice, { kind: 'Group', title: 'traced', memberUserIds: [bob.id] });
  const path = `/api/messenger/chats/${chat.body.id}/messages`;
  const alone = await w.request<{ id: string }>('POST', path, asAlice, { kind: 'Text', body: 'alone' });
  const together = await Promise.all(Array.from({ length: 8 }, (_, i) => w.request<{ id: string }>('POST', path, asAlice, { kind: 'Text', body: `together ${i}` })));

  const admin = await w.token({ admin: true });
  const created = await w.request<{ notifications: { id: string; version: number }[] }>('POST', '/api/notifications', admin, { recipientUserId: alice.id, title: 'Price changed' });
  const inApp = created.body.notifications[0]!;
  const read = await w.request('POST', `/api/notifications/${inApp.id}/read`, asAlice, { version: inApp.version });

  const { rows } = await pool.query<{ id: string; kind: string; chat_id: string | null; message_id: string | null; notification_id: string | null }>(
    `update push.realtime_outbox set status = 'Quarantined', attempts = 8, last_error = 'PUSH_TIMEOUT: hub did not answer'
      returning id, kind, chat_id, message_id, payload->>'NotificationId' as notification_id`,
  );
  const traceOfMessage = new Map([alone, ...together].map((m) => [m.body.id, m.trace]));
  const written: Written = new Map();
  for (const r of rows) {
    const trace =
      r.kind === 'ChatUpdated' && r.chat_id === chat.body.id ? chat.trace
      : r.kind === 'MessageReceived' ? traceOfMessage.get(r.message_id!)
      : r.kind === 'NotificationStatusChanged' && r.notification_id === inApp.id ? read.trace
      : undefined;
    assert.ok(trace, `a realtime row of kind ${r.kind} that no request of the scenario wrote`);
    written.set(r.id, trace);
  }
  assert.deepEqual([...new Set(rows.map((r) => r.kind))].sort(), ['ChatUpdated', 'MessageReceived', 'NotificationStatusChanged']);
  assert.equal(rows.filter((r) => r.kind === 'MessageReceived').length, 9, 'one push row per sent message');
  return written;
}

/** Notifications created by one request (the in-app copy and an SMS), the SMS then failing terminally, as the retry worker leaves it after MaxAttempts. */
export async function terminalNotifications(w: TraceWorld): Promise<Written> {
  const admin = await w.token({ admin: true });
  const created = await w.request<{ notifications: { id: string; channel: string }[] }>('POST', '/api/notifications', admin, {
    recipientUserId: newId(),
    title: 'Viewing confirmed',
    channels: ['Sms'],
    phone: '+79991234567',
  });
  assert.deepEqual(created.body.notifications.map((n) => n.channel).sort(), ['InApp', 'Sms']);
  const sms = created.body.notifications.find((n) => n.channel === 'Sms')!;
  await w.database.pool.query(
    `update notifications.notifications
        set status = 'Failed', attempts = 5, terminal = true, next_attempt_at = null, last_error = 'NTF_PROVIDER_REJECTED', version = version + 1
      where id = $1`,
    [sms.id],
  );
  return new Map([[sms.id, created.trace]]);
}

/**
 * A fan-out task queued by one role change, and a sub-task split from it (the worker's split,
 * called here directly: its own run has another trace), both then Failed as a claim leaves a task
 * that used MaxAttempts.
 */
export async function failedFanOutTasks(w: TraceWorld): Promise<Written> {
  const pool = w.database.pool;
  const roleId = await seedRole(pool);
  const users = await seedUsers(pool, 2);
  await seedAssignments(pool, roleId, users);
  const admin = await w.token({ admin: true });
  const changed = await w.request<{ fanOut: { mode: string; taskId: string } }>('PUT', `/api/identity/roles/${roleId}/permissions`, admin, { permissions: ['objects.read'] });
  assert.equal(changed.body.fanOut.mode, 'queued');
  const taskId = changed.body.fanOut.taskId;

  const subTaskId = newId();
  const parent = (await getTask(w.database.db, taskId))!;
  await w.database.db.transaction((tx) => insertSubTasks(tx, parent, [{ id: subTaskId, after: users[0]!, upTo: null }], new Date()));
  await pool.query(
    `update identity.access_fanout_tasks set status = 'Failed', attempt_count = 5, last_error = 'PgError: deadlock detected (max attempts reached)'
      where id = any($1::uuid[])`,
    [[taskId, subTaskId]],
  );
  return new Map([
    [taskId, changed.trace],
    [subTaskId, changed.trace],
  ]);
}
