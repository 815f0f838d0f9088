import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPool } from '../../../../src/platform/db/index.ts';
import { newId } from '../../../../src/platform/time.ts';
import { standaloneWorkers } from './fixtures/standalone-worker.ts';
import { dispatchedEvents, MINUTE, notificationsWorld, notify, postReceipt, seedFailed, setChannel, stored } from '../support.ts';
import { crashBetweenAcceptanceAndCommit, within } from './fixtures/crash.ts';

const w = await notificationsWorld({}, { notifications: { retryBatchSize: 10, sendConcurrency: 4 } });
const a = w.main;
await setChannel(a, 'Sms', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
const phone = () => `+7988${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;

describe('concurrency and crashes', () => {
  test('AC4: two worker instances running at once never send one notification twice (row locks + leases)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(await seedFailed(a.pool, { channel: 'Sms', address: phone(), dueAt: a.clock.now() }));
    const secondPool = createPool(w.database.url, 4);
    const one = standaloneWorkers(a.pool, w.env, a.clock, w.tuning);
    const two = standaloneWorkers(secondPool, w.env, a.clock, w.tuning);
    w.http.setLatency(15);
    const ctx = () => ({ jobRunId: newId(), signal: new AbortController().signal, log: one.log, now: () => a.clock.now() });
    try {
      const [c1, c2] = await Promise.all([one.retry.runOnce(ctx()), two.retry.runOnce(ctx())]);
      assert.equal(c1.claimed + c2.claimed, 40);
      assert.ok(c1.claimed > 0 && c2.claimed > 0, `both instances worked (${c1.claimed} / ${c2.claimed})`);
    } finally {
      w.http.setLatency(0);
      await Promise.all([one.close(), two.close()]);
      await secondPool.end();
    }
    for (const id of ids) {
      assert.equal(w.http.requestsFor(id).length, 1, `one send for ${id}`);
      assert.equal((await stored(a.pool, id)).status, 'Sent');
      assert.equal((await dispatchedEvents(a.pool, id)).length, 1);
    }
  });

  test('AC4: the distributed lock notifications:retry-worker lets one replica run the cycle; the other skips', async () => {
    const replica = await w.replica();
    replica.clock.set(a.clock.now());
    const id = await seedFailed(a.pool, { channel: 'Sms', address: phone(), dueAt: a.clock.now() });
    const gate = w.http.hold();
    const first = a.runRetry();
    await within(gate.arrived, 'the first replica to send');
    const second = await replica.runRetry();
    assert.equal(second.outcome, 'skipped');
    assert.equal(second.skipReason, 'lock_busy');
    gate.release();
    assert.equal((await first).counts.sent, 1);
    assert.equal(w.http.requestsFor(id).length, 1);
  });

  test('AC6: a worker killed between the provider accepting and the commit causes no second message', async () => {
    const id = await seedFailed(a.pool, { channel: 'Sms', address: phone(), dueAt: new Date(Date.now() - MINUTE) });
    const accepted = await crashBetweenAcceptanceAndCommit(w, 'retry', id, w.http.hold());
    const key = `${id}:1`;
    assert.equal(accepted.idempotencyKey, key);
    assert.ok(w.http.delivered.has(key), 'the provider accepted the message');

    const afterCrash = await stored(a.pool, id);
    assert.equal(afterCrash.status, 'Failed', 'the outcome never committed');
    assert.equal(afterCrash.attempts, 1);
    assert.notEqual(afterCrash.lease_owner, null, 'the dead worker still holds the lease');

    // Once the lease runs out the next cycle resends with the same key; the provider swallows it.
    a.clock.set(new Date(Date.now() + a.tuning.claimLeaseMs + 1000));
    assert.equal((await a.runRetry()).counts.sent, 1);
    const requests = w.http.requestsFor(id);
    assert.equal(requests.length, 2);
    assert.ok(requests.every((r) => r.idempotencyKey === key));
    assert.equal([...w.http.delivered.keys()].filter((k) => k.startsWith(id)).length, 1, 'one message reached the recipient');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    assert.equal(row.provider_message_id, w.http.delivered.get(key));
    assert.equal((await dispatchedEvents(a.pool, id)).length, 1);
  });

  test('A4: after a dispatcher crash the delivery webhook confirms the accepted message: Sent, no resend', async () => {
    a.clock.set(new Date());
    const { byChannel } = await notify(a, { channels: ['Sms'], phone: phone() });
    const id = byChannel.get('Sms')!.id;
    await crashBetweenAcceptanceAndCommit(w, 'dispatch', id, w.http.hold());
    assert.equal((await stored(a.pool, id)).status, 'Pending');
    const providerMessageId = w.http.delivered.get(`${id}:1`)!;

    const res = await postReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'delivered', providerMessageId });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().result, 'marked_sent');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    assert.equal(row.provider_message_id, providerMessageId);
    assert.notEqual(row.delivered_at, null);

    a.clock.advance(a.tuning.claimLeaseMs + 60 * MINUTE);
    await a.runDispatch();
    await a.runRetry();
    assert.equal(w.http.requestsFor(id).length, 1, 'nothing is sent again');
    const events = await dispatchedEvents(a.pool, id);
    assert.deepEqual(events.map((e) => [e.payload.Status, e.payload.ProviderMessageId]), [['Sent', providerMessageId]]);
  });

  test('a stop asked mid-batch starts no new sends, records the ones made and gives the rest back at once', async () => {
    a.clock.set(new Date());
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await seedFailed(a.pool, { channel: 'Sms', address: phone(), dueAt: a.clock.now() }));
    const solo = standaloneWorkers(a.pool, w.env, a.clock, { ...w.tuning, sendConcurrency: 1, retryBatchSize: 5 });
    const stop = new AbortController();
    const gate = w.http.hold();
    const run = solo.retry.runOnce({ jobRunId: newId(), signal: stop.signal, log: solo.log, now: () => a.clock.now() });
    await within(gate.arrived, 'the first send');
    stop.abort();
    gate.release();
    const counts = await run;
    await solo.close();
    assert.equal(counts.sent, 1);
    assert.equal(counts.released, 4);
    const rows = await Promise.all(ids.map((id) => stored(a.pool, id)));
    assert.equal(rows.filter((r) => r.status === 'Sent').length, 1);
    assert.ok(rows.every((r) => r.lease_owner === null), 'no row stays leased');
  });
});

describe('a deploy (stop) during a send', () => {
  test('a send cut off by the stop grace uses no attempt: a row on its last attempt stays retryable and is sent by the next run', async () => {
    a.clock.set(new Date());
    await setChannel(a, 'Sms', { maxAttempts: 3, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
    // Due before anything earlier tests left, so a batch of one takes it.
    const id = await seedFailed(a.pool, { channel: 'Sms', address: phone(), attempts: 2, dueAt: new Date(a.clock.now().getTime() - 60 * MINUTE) });
    const solo = standaloneWorkers(a.pool, w.env, a.clock, { ...w.tuning, retryBatchSize: 1 });
    const stop = new AbortController();
    // The provider hangs: the send is still in flight when the stop grace runs out and cuts it off.
    const gate = w.http.hold();
    try {
      const run = solo.retry.runOnce({ jobRunId: newId(), signal: stop.signal, log: solo.log, now: () => a.clock.now() });
      await within(gate.arrived, 'the send to reach the provider');
      stop.abort();
      const counts = await within(run, 'the stopped run to end');
      assert.equal(counts.terminal, 0);
      assert.equal(counts.retried, 0);
      assert.equal(counts.released, 1);
    } finally {
      gate.release();
      await solo.close();
    }
    const afterStop = await stored(a.pool, id);
    assert.equal(afterStop.status, 'Failed');
    assert.equal(afterStop.terminal, false, 'the stop did not burn the last attempt');
    assert.equal(afterStop.attempts, 2);
    assert.equal(afterStop.lease_owner, null, 'the lease is given back at once');
    assert.equal((await dispatchedEvents(a.pool, id)).length, 0);

    await a.runRetry();
    assert.equal(w.http.requestsFor(id).length, 2, 'sent again by the next run');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    assert.equal(row.attempts, 3);
    assert.equal((await dispatchedEvents(a.pool, id)).length, 1);
    await setChannel(a, 'Sms', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
  });
});
