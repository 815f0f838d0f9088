import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../src/platform/time.ts';
import { logCapture } from '../../support/logs.ts';
import { MINUTE, notificationsWorld, seedFailed, setChannel, stored, type NtfApp } from './support.ts';

/** Runbook NotificationsTerminalFailures: the reprocess calls (one by id; by channel / error code / time range). */

const logs = logCapture('info');
const w = await notificationsWorld({ LOG_LEVEL: 'info' }, { logDestination: logs.stream });
const a = w.main;
const admin = { authorization: `Bearer ${a.adminToken}` };
const adminId = JSON.parse(Buffer.from(a.adminToken.split('.')[1]!, 'base64url').toString()).sub as string | undefined;

/** A terminal Failed row as the retry worker leaves it after MaxAttempts (failed `failedAgoMs` before now). */
async function seedTerminal(o: { channel: 'Sms' | 'Email' | 'Push'; code?: string; failedAgoMs?: number; cycle?: number }): Promise<string> {
  const at = new Date(a.clock.now().getTime() - (o.failedAgoMs ?? MINUTE));
  const address = o.channel === 'Sms' ? '+79991234567' : o.channel === 'Email' ? 'buyer@example.org' : 'device-token-0123456789';
  const id = await seedFailed(a.pool, { channel: o.channel, address, attempts: 5, dueAt: at });
  await a.pool.query(
    `update notifications.notifications set terminal = true, next_attempt_at = null, last_error = $2, delivery_cycle = $3, version = 6, updated_at = $4 where id = $1`,
    [id, o.code ?? 'NTF_PROVIDER_TRANSIENT', o.cycle ?? 1, at],
  );
  return id;
}

const reprocessOne = (id: string, headers: Record<string, string> = admin) =>
  a.app.inject({ method: 'POST', url: `/api/notifications/terminal-failures/${id}/reprocess`, headers });
const reprocessMatching = (payload: Record<string, unknown>, headers: Record<string, string> = admin) =>
  a.app.inject({ method: 'POST', url: '/api/notifications/terminal-failures/reprocess', headers, payload });

/** Every terminal row's state, to show a refused call changed nothing. */
async function terminalSnapshot(app: NtfApp): Promise<string> {
  const { rows } = await app.pool.query(`select id, terminal, delivery_cycle, attempts, version from notifications.notifications order by id`);
  return JSON.stringify(rows);
}

describe('reprocess terminal notification failures', () => {
  test('one by id: a new DeliveryCycle, Attempts 0, due now; the retry worker sends it with the new cycle’s Idempotency-Key; audited', async () => {
    await setChannel(a, 'Sms', { maxAttempts: 5 });
    const id = await seedTerminal({ channel: 'Sms', cycle: 2 });

    const res = await reprocessOne(id);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { reprocessed: 1, notifications: [{ id, channel: 'Sms', deliveryCycle: 3, lastError: 'NTF_PROVIDER_TRANSIENT' }] });
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Failed');
    assert.equal(row.terminal, false);
    assert.equal(row.delivery_cycle, 3);
    assert.equal(row.attempts, 0);
    assert.equal(row.next_attempt_at?.getTime(), a.clock.now().getTime());
    assert.equal(row.version, 7);
    const { rows: frames } = await a.pool.query<{ frame: Record<string, unknown> }>(
      `select payload as frame from push.realtime_outbox where kind = 'NotificationStatusChanged' and payload->>'NotificationId' = $1`,
      [id],
    );
    assert.deepEqual(
      frames.map((f) => [f.frame.Status, f.frame.Terminal, f.frame.DeliveryCycle, f.frame.Version]),
      [['Failed', false, 3, 7]],
      'the reopen is announced with it (NotificationStatusChanged)',
    );

    await a.runRetry();
    const sent = await stored(a.pool, id);
    assert.equal(sent.status, 'Sent');
    assert.deepEqual(w.http.requestsFor(id).map((r) => r.idempotencyKey), [`${id}:3`]);

    const audit = logs.lines().find((l) => l.msg === 'terminal notification reprocessed' && l.notificationId === id);
    assert.ok(audit, 'the audit line');
    assert.equal(audit.actor, adminId);
    assert.equal(audit.deliveryCycle, 3);
  });

  test('one by id refuses a row that is not terminal (409) and an unknown id (404), changing nothing', async () => {
    const pending = await seedFailed(a.pool, { channel: 'Sms', address: '+79991234567', dueAt: a.clock.now() });
    const before = await terminalSnapshot(a);
    const notTerminal = await reprocessOne(pending);
    assert.equal(notTerminal.statusCode, 409);
    assert.equal(notTerminal.json().code, 'NTF_NOTIFICATION_NOT_TERMINAL');
    const unknown = await reprocessOne(newId());
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().code, 'NTF_NOTIFICATION_NOT_FOUND');
    assert.equal((await reprocessOne('not-a-uuid')).statusCode, 400);
    assert.equal(await terminalSnapshot(a), before);
  });

  test('by channel, error code and time range: only matching rows, oldest failure first, at most limit per call', async () => {
    const hour = 60 * MINUTE;
    const match = [
      await seedTerminal({ channel: 'Email', code: 'NTF_PROVIDER_AUTH_FAILED', failedAgoMs: 3 * hour }),
      await seedTerminal({ channel: 'Email', code: 'NTF_PROVIDER_AUTH_FAILED', failedAgoMs: 2 * hour }),
      await seedTerminal({ channel: 'Email', code: 'NTF_PROVIDER_AUTH_FAILED', failedAgoMs: 1 * hour }),
    ];
    const otherCode = await seedTerminal({ channel: 'Email', code: 'NTF_PROVIDER_INVALID_RECIPIENT', failedAgoMs: 2 * hour });
    const otherChannel = await seedTerminal({ channel: 'Push', code: 'NTF_PROVIDER_AUTH_FAILED', failedAgoMs: 2 * hour });
    const tooOld = await seedTerminal({ channel: 'Email', code: 'NTF_PROVIDER_AUTH_FAILED', failedAgoMs: 30 * hour });
    const now = a.clock.now().getTime();
    const filter = {
      channel: 'Email',
      errorCode: 'NTF_PROVIDER_AUTH_FAILED',
      failedFrom: new Date(now - 24 * hour).toISOString(),
      failedBefore: new Date(now).toISOString(),
    };

    const first = await reprocessMatching({ ...filter, limit: 2 });
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(first.json().notifications.map((n: { id: string }) => n.id), match.slice(0, 2));
    const second = await reprocessMatching({ ...filter, limit: 2 });
    assert.deepEqual(second.json().notifications.map((n: { id: string }) => n.id), match.slice(2));
    assert.equal((await reprocessMatching({ ...filter, limit: 2 })).json().reprocessed, 0);

    for (const id of match) assert.equal((await stored(a.pool, id)).terminal, false);
    for (const id of [otherCode, otherChannel, tooOld]) assert.equal((await stored(a.pool, id)).terminal, true, id);

    const audit = logs.lines().filter((l) => l.msg === 'terminal notifications reprocessed');
    assert.deepEqual(audit.slice(-3).map((l) => l.reprocessed), [2, 1, 0]);
    assert.deepEqual(audit.at(-1)!.filter, filter);
    assert.equal(audit.at(-1)!.actor, adminId);
  });

  test('refused calls — no filter, an empty or invalid range, a bad code, an oversized limit, no admin — are 4xx {code,message} and change nothing', async () => {
    await seedTerminal({ channel: 'Sms' });
    const before = await terminalSnapshot(a);
    const linesBefore = logs.lines().filter((l) => String(l.msg).startsWith('terminal notification')).length;
    const at = a.clock.now().toISOString();
    const cases: [Record<string, unknown>, number, string][] = [
      [{}, 400, 'NTF_REPROCESS_FILTER_REQUIRED'],
      [{ limit: 10 }, 400, 'NTF_REPROCESS_FILTER_REQUIRED'],
      [{ failedFrom: at, failedBefore: at }, 400, 'NTF_REPROCESS_RANGE_INVALID'],
      [{ failedFrom: '2026-13-45T99:00:00Z' }, 400, 'NTF_REPROCESS_RANGE_INVALID'],
      [{ failedFrom: 'yesterday' }, 400, 'VALIDATION_FAILED'],
      [{ errorCode: "x' or 1=1 --" }, 400, 'VALIDATION_FAILED'],
      [{ channel: 'Pigeon' }, 400, 'VALIDATION_FAILED'],
      [{ channel: 'Sms', limit: 1_000_000 }, 400, 'VALIDATION_FAILED'],
      [{ channel: 'Sms', errrorCode: 'NTF_PROVIDER_TRANSIENT' }, 400, 'NTF_REPROCESS_FILTER_UNKNOWN'],
      [{ channel: 'Sms', constructor: 1 }, 400, 'NTF_REPROCESS_FILTER_UNKNOWN'],
    ];
    for (const [payload, status, code] of cases) {
      const res = await reprocessMatching(payload);
      assert.equal(res.statusCode, status, JSON.stringify(payload));
      assert.equal(res.json().code, code, JSON.stringify(payload));
      assert.equal(typeof res.json().message, 'string');
    }
    const user = { authorization: `Bearer ${await a.userToken(newId())}` };
    assert.equal((await reprocessMatching({ channel: 'Sms' }, user)).statusCode, 403);
    assert.equal((await reprocessMatching({ channel: 'Sms' }, {})).statusCode, 401);
    assert.equal((await reprocessOne(newId(), user)).statusCode, 403);
    assert.equal(await terminalSnapshot(a), before);
    assert.equal(logs.lines().filter((l) => String(l.msg).startsWith('terminal notification')).length, linesBefore);
  });
});
