import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import type { MessengerPushKind } from '../../../../src/modules/messenger/model/push-kinds.ts';
import { messengerApp } from '../support/app.ts';
import { T0, insertChat, insertOutbox, uid } from '../support/dispatch.ts';

/**
 * The bulk requeue of Quarantined realtime rows is a runbook call that cannot hurt: it takes only
 * the rows its filters name (kind, LastError prefix, created-at range), at most `limit` a call,
 * a dry run changes nothing, and bad filters are refused with nothing changed.
 */

const base = '/api/messenger/admin/realtime-outbox';
const hour = 3_600_000;
type Reply = { dryRun: boolean; matched: number; requeued: number };

const m = await messengerApp();
const admin = await m.token({ admin: true });
const chatId = await insertChat(m.pool, [uid()]);

async function quarantined(o: { kind?: MessengerPushKind; lastError?: string; createdAt?: Date } = {}): Promise<string> {
  const kind = o.kind ?? 'MessageReceived';
  const id = await insertOutbox(m.pool, {
    kind,
    chatId,
    ...(kind.startsWith('Message') ? { messageId: newId() } : { refId: newId() }),
    status: 'Quarantined',
    attempts: 8,
    createdAt: o.createdAt ?? T0,
  });
  await m.pool.query(`update push.realtime_outbox set last_error = $2 where id = $1`, [id, o.lastError ?? 'Error: hub down']);
  return id;
}

/** Every row as stored, to prove a call changed nothing. */
async function snapshot(): Promise<unknown[]> {
  return (await m.pool.query(`select * from push.realtime_outbox order by id`)).rows;
}

async function pendingAmong(ids: string[]): Promise<string[]> {
  const { rows } = await m.pool.query<{ id: string }>(
    `select id from push.realtime_outbox where id = any($1::uuid[]) and status = 'Pending' and attempts = 0 order by id`,
    [ids],
  );
  return rows.map((r) => r.id);
}

const requeue = (body?: object) => m.call<Reply & { code: string; message: string }>(admin, 'POST', `${base}/requeue-quarantined`, body);

/** Puts every Quarantined row out of the way, so each test counts only its own rows. */
async function clear(): Promise<void> {
  await m.pool.query(`delete from push.realtime_outbox`);
}

describe('bulk requeue of Quarantined realtime rows: filters, limit, dry run', () => {
  test('kind: only rows of that kind go back to Pending', async () => {
    await clear();
    const messages = [await quarantined(), await quarantined()];
    const chatUpdates = [await quarantined({ kind: 'ChatUpdated' }), await quarantined({ kind: 'ChatUpdated' })];
    const res = await requeue({ kind: 'ChatUpdated' });
    assert.deepEqual([res.status, res.body], [200, { dryRun: false, matched: 2, requeued: 2 }]);
    assert.deepEqual(await pendingAmong([...messages, ...chatUpdates]), chatUpdates);
  });

  test('lastErrorPrefix: only rows whose LastError starts with the text; pattern characters are plain text', async () => {
    await clear();
    const hubDown = [await quarantined({ lastError: 'Error: hub down' }), await quarantined({ lastError: 'Error: hub unreachable' })];
    const missing = await quarantined({ lastError: 'MSG_REALTIME_REF_NOT_FOUND' });
    const percent = await quarantined({ lastError: 'Error: 50% of sends timed out' });
    const underscore = await quarantined({ lastError: 'Error: 50x of sends' });
    assert.deepEqual((await requeue({ lastErrorPrefix: 'Error: hub' })).body, { dryRun: false, matched: 2, requeued: 2 });
    assert.deepEqual(await pendingAmong([...hubDown, missing, percent, underscore]), hubDown);
    // '%' and '_' would match anything in a LIKE pattern; here they match only themselves.
    assert.deepEqual((await requeue({ lastErrorPrefix: 'Error: 50%' })).body, { dryRun: false, matched: 1, requeued: 1 });
    assert.deepEqual((await requeue({ lastErrorPrefix: 'Error: 5_' })).body, { dryRun: false, matched: 0, requeued: 0 });
    assert.deepEqual(await pendingAmong([missing, percent, underscore]), [percent]);
  });

  test('created-at range: [createdFrom, createdTo), either end optional', async () => {
    await clear();
    const older = await quarantined({ createdAt: new Date(T0.getTime() - 2 * hour) });
    const inRange = await quarantined({ createdAt: new Date(T0.getTime() - hour) });
    const atEnd = await quarantined({ createdAt: T0 });
    const range = { createdFrom: new Date(T0.getTime() - hour).toISOString(), createdTo: T0.toISOString() };
    assert.deepEqual((await requeue(range)).body, { dryRun: false, matched: 1, requeued: 1 });
    assert.deepEqual(await pendingAmong([older, inRange, atEnd]), [inRange]);
    assert.deepEqual((await requeue({ createdTo: new Date(T0.getTime() - hour).toISOString() })).body, { dryRun: false, matched: 1, requeued: 1 });
    assert.deepEqual(await pendingAmong([older, inRange, atEnd]), [older, inRange]);
    assert.deepEqual((await requeue({ createdFrom: T0.toISOString() })).body, { dryRun: false, matched: 1, requeued: 1 });
    assert.deepEqual(await pendingAmong([older, inRange, atEnd]), [older, inRange, atEnd]);
  });

  test('filters combine: kind, prefix and range together', async () => {
    await clear();
    const from = new Date(T0.getTime() - hour);
    const hit = await quarantined({ kind: 'ChatUpdated', lastError: 'Error: hub down', createdAt: from });
    const others = [
      await quarantined({ kind: 'MessageReceived', lastError: 'Error: hub down', createdAt: from }),
      await quarantined({ kind: 'ChatUpdated', lastError: 'MSG_REALTIME_REF_NOT_FOUND', createdAt: from }),
      await quarantined({ kind: 'ChatUpdated', lastError: 'Error: hub down', createdAt: new Date(T0.getTime() - 2 * hour) }),
    ];
    const res = await requeue({ kind: 'ChatUpdated', lastErrorPrefix: 'Error: hub', createdFrom: from.toISOString(), createdTo: T0.toISOString() });
    assert.deepEqual(res.body, { dryRun: false, matched: 1, requeued: 1 });
    assert.deepEqual(await pendingAmong([hit, ...others]), [hit]);
  });

  test('limit: at most `limit` rows a call, oldest first; matched tells what is left; the default is 100', async () => {
    await clear();
    const rows: string[] = [];
    for (let i = 0; i < 5; i++) rows.push(await quarantined());
    assert.deepEqual((await requeue({ limit: 2 })).body, { dryRun: false, matched: 5, requeued: 2 });
    assert.deepEqual(await pendingAmong(rows), rows.slice(0, 2));
    assert.deepEqual((await requeue({ limit: 2 })).body, { dryRun: false, matched: 3, requeued: 2 });
    assert.deepEqual(await pendingAmong(rows), rows.slice(0, 4));

    await clear();
    const many: string[] = [];
    for (let i = 0; i < 101; i++) many.push(await quarantined());
    assert.deepEqual((await requeue()).body, { dryRun: false, matched: 101, requeued: 100 });
    assert.deepEqual(await pendingAmong(many), many.slice(0, 100));
  });

  test('dryRun: answers the count of matching rows and changes nothing', async () => {
    await clear();
    await quarantined({ kind: 'ChatUpdated' });
    await quarantined({ kind: 'ChatUpdated' });
    await quarantined({ kind: 'ChatUpdated', lastError: 'MSG_REALTIME_REF_NOT_FOUND' });
    await quarantined();
    const before = await snapshot();
    assert.deepEqual((await requeue({ kind: 'ChatUpdated', lastErrorPrefix: 'Error:', dryRun: true, limit: 1 })).body, {
      dryRun: true,
      matched: 2,
      requeued: 0,
    });
    assert.deepEqual((await requeue({ dryRun: true })).body, { dryRun: true, matched: 4, requeued: 0 });
    assert.deepEqual(await snapshot(), before);
  });

  test('bad filters answer 400 { code, message } and change nothing', async () => {
    await clear();
    await quarantined();
    await quarantined({ kind: 'ChatUpdated' });
    const before = await snapshot();
    const cases: [object, string][] = [
      [{ kind: 'NoSuchKind' }, 'VALIDATION_FAILED'],
      [{ kind: 42 }, 'VALIDATION_FAILED'],
      [{ lastErrorPrefix: '' }, 'VALIDATION_FAILED'],
      [{ lastErrorPrefix: 'x'.repeat(513) }, 'VALIDATION_FAILED'],
      [{ lastErrorPrefix: 'a\u0000b' }, 'VALIDATION_FAILED'],
      [{ createdFrom: 'yesterday' }, 'VALIDATION_FAILED'],
      [{ createdFrom: '2026-13-45T99:99:99Z' }, 'MSG_REALTIME_REQUEUE_INVALID_FILTER'],
      [{ createdFrom: T0.toISOString(), createdTo: T0.toISOString() }, 'MSG_REALTIME_REQUEUE_INVALID_FILTER'],
      [{ createdFrom: T0.toISOString(), createdTo: new Date(T0.getTime() - hour).toISOString() }, 'MSG_REALTIME_REQUEUE_INVALID_FILTER'],
      [{ limit: 0 }, 'VALIDATION_FAILED'],
      [{ limit: 1001 }, 'VALIDATION_FAILED'],
      [{ limit: 2.5 }, 'VALIDATION_FAILED'],
      [{ dryRun: 'maybe' }, 'VALIDATION_FAILED'],
      // A mistyped field must not be dropped: the call would then take every Quarantined row.
      [{ kinds: 'ChatUpdated' }, 'MSG_REALTIME_REQUEUE_INVALID_FILTER'],
      [{ kind: 'ChatUpdated', status: 'Done' }, 'MSG_REALTIME_REQUEUE_INVALID_FILTER'],
      [[], 'VALIDATION_FAILED'],
    ];
    for (const [body, code] of cases) {
      const res = await requeue(body);
      assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.status}`);
      assert.equal(res.body.code, code, JSON.stringify(body));
      assert.equal(typeof res.body.message, 'string');
    }
    assert.deepEqual(await snapshot(), before);
    // Dates at the ends of the range are filters like any other, never a database error.
    for (const edge of [{ createdTo: '0000-01-01T00:00:00Z' }, { createdFrom: '9999-12-31T23:59:59.999999999+14:00' }]) {
      assert.deepEqual((await requeue({ ...edge, dryRun: true })).body, { dryRun: true, matched: 0, requeued: 0 }, JSON.stringify(edge));
    }
    const user = (await m.user()).token;
    assert.equal((await m.call(user, 'POST', `${base}/requeue-quarantined`, { dryRun: true })).status, 403);
  });
});
