import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import { dispatchedEvents, metric, notificationsWorld, notify, postReceipt, seedFailed, setChannel, stored, type NtfApp } from '../support.ts';

const w = await notificationsWorld();
const a = w.main;
await setChannel(a, 'Sms', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
const phone = () => `+7977${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;

const within = <T>(p: Promise<T>, what: string): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), 15_000).unref())]);

async function markRead(app: NtfApp, userId: string, id: string, version: number) {
  return app.app.inject({
    method: 'POST',
    url: `/api/notifications/${id}/read`,
    headers: { authorization: `Bearer ${await app.userToken(userId)}` },
    payload: { version },
  });
}

describe('optimistic version races (A5, AC8)', () => {
  test('AC8: mark-read committed while a retry is in flight wins; the worker re-reads and re-applies Sent without undoing the read', async () => {
    const userId = newId();
    const id = await seedFailed(a.pool, { channel: 'Sms', address: phone(), dueAt: a.clock.now(), userId });
    const before = await stored(a.pool, id);
    const gate = w.http.hold();
    const run = a.runRetry();
    await within(gate.arrived, 'the provider to receive the retry');

    const read = await markRead(a, userId, id, before.version);
    assert.equal(read.statusCode, 200, read.body);
    assert.equal(read.json().version, before.version + 1);
    gate.release();
    const counts = (await run).counts;
    assert.equal(counts.conflicts, 1, 'the worker lost the version race');
    assert.equal(counts.sent, 1, 'and re-applied its outcome');

    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    assert.notEqual(row.read_at, null, 'the first mutation (mark-read) is kept');
    assert.equal(row.version, before.version + 2);
    assert.equal((await dispatchedEvents(a.pool, id)).length, 1);
    assert.equal(await metric(a, 'notifications_version_conflicts_total', { writer: 'worker', resolution: 'reapplied' }), 1);
  });

  test('AC8: a mark-read with a stale version gets 409, never touches Status; the client re-reads and a Sent notification stays Sent', async () => {
    const { userId, byChannel } = await notify(a, { channels: ['Sms'], phone: phone() });
    const created = byChannel.get('Sms')!;
    await a.runDispatch(); // Pending → Sent bumps the version the client saw
    assert.equal((await stored(a.pool, created.id)).status, 'Sent');

    const stale = await markRead(a, userId, created.id, created.version);
    assert.equal(stale.statusCode, 409);
    assert.equal(stale.json().code, 'NTF_VERSION_CONFLICT');
    assert.equal((await stored(a.pool, created.id)).read_at, null);

    const fresh = await a.app.inject({
      method: 'GET',
      url: `/api/notifications/${created.id}`,
      headers: { authorization: `Bearer ${await a.userToken(userId)}` },
    });
    const again = await markRead(a, userId, created.id, fresh.json().version);
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().status, 'Sent');
    assert.notEqual(again.json().readAt, null);
  });

  test('A5: a delivery webhook that records Sent while a retry is in flight wins; the worker\'s stale failure is dropped', async () => {
    const id = await seedFailed(a.pool, { channel: 'Sms', address: phone(), dueAt: a.clock.now() });
    w.http.failNext(1, { status: 503 });
    const gate = w.http.hold();
    const run = a.runRetry();
    await within(gate.arrived, 'the provider to receive the retry');

    const receipt = await postReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'delivered', providerMessageId: 'gw-42' });
    assert.equal(receipt.json().result, 'marked_sent');
    gate.release();
    const counts = (await run).counts;
    assert.equal(counts.discarded, 1);
    assert.equal(counts.retried, 0);

    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent', 'Sent is never rolled back (INV-NTF-5)');
    assert.equal(row.provider_message_id, 'gw-42');
    assert.equal(row.attempts, 1);
    assert.equal(row.last_error, null);
    const events = await dispatchedEvents(a.pool, id);
    assert.deepEqual(events.map((e) => e.payload.Status), ['Sent']);
    assert.equal(await metric(a, 'notifications_version_conflicts_total', { writer: 'worker', resolution: 'discarded' }), 1);
  });
});
