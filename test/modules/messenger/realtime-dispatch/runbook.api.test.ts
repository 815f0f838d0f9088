import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import { messengerApp } from '../support/app.ts';
import { insertChat, insertOutbox, outboxRow, uid } from '../support/dispatch.ts';

type Quarantined = { id: string; kind: string; attempts: number; lastError: string | null };

describe('runbook endpoints (admin): quarantined realtime_outbox rows', () => {
  test('list Quarantined rows with LastError (paged), requeue one or all → Pending, Attempts = 0, due now; users are refused', async () => {
    const m = await messengerApp();
    const admin = await m.token({ admin: true });
    const user = (await m.user()).token;
    const chatId = await insertChat(m.pool, [uid()]);
    const q = async () => {
      const id = await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined', attempts: 8 });
      await m.pool.query(`update push.realtime_outbox set last_error = 'Error: hub down' where id = $1`, [id]);
      return id;
    };
    const [a, b, c] = [await q(), await q(), await q()];
    const pending = await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, messageId: newId() });
    const base = '/api/messenger/admin/realtime-outbox';

    assert.equal((await m.call(user, 'GET', `${base}/quarantined`)).status, 403);
    assert.equal((await m.call(user, 'POST', `${base}/requeue-quarantined`)).status, 403);
    const page1 = await m.call<{ items: Quarantined[]; nextAfter: string | null }>(admin, 'GET', `${base}/quarantined?limit=2`);
    assert.deepEqual(page1.body.items.map((r) => r.id), [a, b]);
    assert.deepEqual([page1.body.items[0]!.attempts, page1.body.items[0]!.lastError], [8, 'Error: hub down']);
    const page2 = await m.call<{ items: Quarantined[]; nextAfter: string | null }>(admin, 'GET', `${base}/quarantined?limit=2&after=${page1.body.nextAfter}`);
    assert.deepEqual([page2.body.items.map((r) => r.id), page2.body.nextAfter], [[c], null]);

    const before = await outboxRow(m.pool, a);
    assert.deepEqual((await m.call(admin, 'POST', `${base}/${a}/requeue`)).body, { requeued: 1 });
    const requeued = await outboxRow(m.pool, a);
    assert.deepEqual([requeued.status, requeued.attempts, requeued.next_attempt_at.getTime()], ['Pending', 0, m.clock.now().getTime()]);
    assert.ok(requeued.row_version > before.row_version, 'RowVersion moves, so a late outcome of an old claim cannot land');
    const notQuarantined = await m.call<{ code: string }>(admin, 'POST', `${base}/${pending}/requeue`);
    assert.deepEqual([notQuarantined.status, notQuarantined.body.code], [404, 'MSG_REALTIME_ROW_NOT_QUARANTINED']);
    assert.deepEqual((await m.call(admin, 'POST', `${base}/requeue-quarantined`)).body, { dryRun: false, matched: 2, requeued: 2 });
    assert.equal((await m.call<{ items: Quarantined[] }>(admin, 'GET', `${base}/quarantined`)).body.items.length, 0);
    for (const id of [b, c]) assert.equal((await outboxRow(m.pool, id)).status, 'Pending');
  });
});
