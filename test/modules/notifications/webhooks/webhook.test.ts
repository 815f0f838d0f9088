import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dispatchedEvents, metric, notificationsWorld, notify, postReceipt, setChannel, stored, type NtfApp } from '../support.ts';

const w = await notificationsWorld();
const a = w.main;
await setChannel(a, 'Sms', { maxAttempts: 2, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
const phone = () => `+7966${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;

async function sentSms(app: NtfApp = a): Promise<string> {
  const { byChannel } = await notify(app, { channels: ['Sms'], phone: phone() });
  const id = byChannel.get('Sms')!.id;
  await app.runDispatch();
  assert.equal((await stored(app.pool, id)).status, 'Sent');
  return id;
}

const outboxCount = async () => Number((await a.pool.query('select count(*) from platform.outbox')).rows[0].count);

describe('delivery webhook', () => {
  test('AC7: a failed-delivery webhook reopens Sent → Failed into the retry cycle; exhausting it is terminal Failed, not a DLQ', async () => {
    const id = await sentSms();
    const res = await postReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'failed', errorCode: 'UNDELIVERED' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().result, 'reopened');
    const reopened = await stored(a.pool, id);
    assert.equal(reopened.status, 'Failed');
    assert.equal(reopened.terminal, false);
    assert.equal(reopened.delivery_cycle, 2);
    assert.equal(reopened.attempts, 0, 'attempts restart for the new cycle');
    assert.equal(reopened.last_error, 'NTF_PROVIDER_DELIVERY_FAILED');
    assert.deepEqual(reopened.next_attempt_at, a.clock.now(), 'due at once');

    // Back in the cycle: this time the provider keeps failing until MaxAttempts (2).
    w.http.setRule((r) => (r.body.clientReference === id ? { status: 503 } : undefined));
    await a.runRetry();
    a.clock.advance(60_000);
    await a.runRetry();
    w.http.setRule(null);
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Failed');
    assert.equal(row.terminal, true);
    assert.equal(row.attempts, 2);
    const events = await dispatchedEvents(a.pool, id);
    assert.deepEqual(events.map((e) => [e.payload.Status, e.payload.DeliveryCycle]), [['Sent', 1], ['Failed', 2]]);
    const { rows } = await a.pool.query(`select distinct topic from platform.outbox where key = $1`, [id]);
    assert.deepEqual(rows.map((r) => r.topic), ['pin.notifications.dispatched.v1'], 'no dead-letter anywhere');
  });

  test('a failed-webhook reopen resends with the new cycle\'s key, so the deduping provider sends it again', async () => {
    const id = await sentSms();
    await postReceipt(a, 'http-sms', { clientReference: `${id}:1`, status: 'failed' });
    assert.equal((await a.runRetry()).counts.sent, 1);

    const keys = w.http.requestsFor(id).map((r) => r.idempotencyKey);
    assert.deepEqual(keys, [`${id}:1`, `${id}:2`]);
    assert.ok(w.http.delivered.has(`${id}:2`), 'the provider did not swallow the resend');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    assert.equal(row.delivery_cycle, 2);
    assert.equal(row.provider_message_id, w.http.delivered.get(`${id}:2`));
    const events = await dispatchedEvents(a.pool, id);
    assert.deepEqual(events.map((e) => [e.payload.Status, e.payload.DeliveryCycle]), [['Sent', 1], ['Sent', 2]]);
  });

  test('a webhook with a bad signature is refused with 401 and changes nothing', async () => {
    const id = await sentSms();
    const before = await stored(a.pool, id);
    const outboxBefore = await outboxCount();
    const body = { clientReference: id, status: 'failed' };
    const nowSec = Math.floor(a.clock.now().getTime() / 1000);
    const attempts = [
      await postReceipt(a, 'http-sms', body, { secret: null }),
      await postReceipt(a, 'http-sms', body, { secret: 'somebody-elses-secret-0123456789' }),
      await postReceipt(a, 'http-sms', body, { tamper: (raw) => raw.replace('failed', 'delivered') }),
      await postReceipt(a, 'http-sms', body, { timestamp: nowSec - 3600 }),
      await postReceipt(a, 'http-sms', body, { secret: null, tamper: () => 'not json at all' }),
    ];
    for (const res of attempts) {
      assert.equal(res.statusCode, 401, res.body);
      assert.equal(res.json().code, 'NTF_WEBHOOK_SIGNATURE_INVALID');
    }
    assert.deepEqual(await stored(a.pool, id), before);
    assert.equal(await outboxCount(), outboxBefore);
    assert.equal(await metric(a, 'notifications_webhooks_total', { provider: 'http-sms', result: 'unauthorized' }), attempts.length);
    assert.equal((await postReceipt(a, 'nobody', body)).statusCode, 404);
  });

  test('after MaxReopens cycles a failed-delivery webhook makes the notification terminal Failed with its event', async () => {
    const strict = await w.replica({}, { maxReopens: 1 });
    const id = await sentSms(strict);
    assert.equal((await postReceipt(strict, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'failed' })).json().result, 'reopened');
    await strict.runRetry();
    assert.equal((await stored(a.pool, id)).delivery_cycle, 2);
    const res = await postReceipt(strict, 'http-sms', { clientReference: id, deliveryCycle: 2, status: 'failed' });
    assert.equal(res.json().result, 'terminal');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Failed');
    assert.equal(row.terminal, true);
    assert.equal(row.last_error, 'NTF_PROVIDER_DELIVERY_FAILED');
    const events = await dispatchedEvents(a.pool, id);
    assert.deepEqual(events.at(-1)!.payload.Status, 'Failed');
    assert.deepEqual(events.at(-1)!.payload.ErrorCode, 'NTF_PROVIDER_DELIVERY_FAILED');
    assert.equal(await metric(strict, 'notifications_terminal_failures_total', { reason: 'delivery_failed' }), 1);
  });

  test('delivered confirms once; receipts for an older cycle or from another channel\'s provider are ignored', async () => {
    const id = await sentSms();
    assert.equal((await postReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'delivered' })).json().result, 'confirmed');
    assert.notEqual((await stored(a.pool, id)).delivered_at, null);
    // The provider reports it again, signed anew (the same signature again would be a replay: 409).
    const later = Math.floor(a.clock.now().getTime() / 1000) + 1;
    assert.equal((await postReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'delivered' }, { timestamp: later })).json().result, 'already_confirmed');
    assert.equal((await postReceipt(a, 'http-push', { clientReference: id, deliveryCycle: 1, status: 'failed' })).json().result, 'provider_mismatch');
    assert.equal((await postReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 7, status: 'failed' })).json().result, 'stale_cycle');
    assert.equal((await stored(a.pool, id)).status, 'Sent');
    assert.equal(
      (await postReceipt(a, 'http-sms', { clientReference: '0190a0b0-0000-7000-8000-00000000dead', deliveryCycle: 1, status: 'failed' })).json().result,
      'unknown_notification',
    );
  });
});
