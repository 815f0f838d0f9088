import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NOTIFICATIONS_CLEANUP_JOB } from '../../../../src/modules/notifications/model.ts';
import { dispatchedEvents, metric, notificationsWorld, notify, postReceipt, setChannel, signedReceipt, stored, type NtfApp } from '../support.ts';
import { NOTIFICATIONS_DEFAULTS } from '../../../../src/modules/notifications/defaults.ts';

/**
 * A signed delivery receipt takes effect once (NTF_WEBHOOK_REPLAYED). Its signature is remembered in
 * PostgreSQL (so every replica agrees) in the transaction of its effect; a receipt must say which
 * DeliveryCycle it answers; provider keys are own properties only.
 */
const w = await notificationsWorld();
const a = w.main;
await setChannel(a, 'Sms', { maxAttempts: 3, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
const phone = () => `+7966${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;

async function sentSms(app: NtfApp = a): Promise<string> {
  const { byChannel } = await notify(app, { channels: ['Sms'], phone: phone() });
  const id = byChannel.get('Sms')!.id;
  await app.runDispatch();
  assert.equal((await stored(app.pool, id)).status, 'Sent');
  return id;
}

const outboxCount = async () => Number((await a.pool.query('select count(*) from platform.outbox')).rows[0].count);
const replayMarks = async () => Number((await a.pool.query('select count(*) from notifications.webhook_replays')).rows[0].count);

describe('webhook replay', () => {
  test('the same signed receipt twice: the second is 409 NTF_WEBHOOK_REPLAYED and changes nothing', async () => {
    const id = await sentSms();
    const request = signedReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'failed' });
    const first = await a.app.inject(request);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().result, 'reopened');
    const afterFirst = await stored(a.pool, id);
    const outboxAfterFirst = await outboxCount();

    const again = await a.app.inject(request);
    assert.equal(again.statusCode, 409, again.body);
    assert.equal(again.json().code, 'NTF_WEBHOOK_REPLAYED');
    // The check accepts the hex in any case; the replay guard must not be dodged by re-casing it.
    const recased = await a.app.inject({ ...request, headers: { ...request.headers, 'x-signature': request.headers['x-signature']!.toUpperCase().replace('SHA256=', 'sha256=') } });
    assert.equal(recased.statusCode, 409, recased.body);

    assert.deepEqual(await stored(a.pool, id), afterFirst, 'one reopen, not two');
    assert.equal(afterFirst.delivery_cycle, 2);
    assert.equal(await outboxCount(), outboxAfterFirst);
    assert.equal(await metric(a, 'notifications_webhooks_total', { provider: 'http-sms', result: 'replayed' }), 2);
  });

  test('a receipt replayed to another replica on the same database is refused too, also when both arrive at once', async () => {
    const b = await w.replica();
    const id = await sentSms();
    const request = signedReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'delivered' });
    assert.equal((await a.app.inject(request)).json().result, 'confirmed');
    const onB = await b.app.inject(request);
    assert.equal(onB.statusCode, 409, onB.body);
    assert.equal(onB.json().code, 'NTF_WEBHOOK_REPLAYED');

    // Both replicas at the same moment: the database lets exactly one apply it.
    const other = await sentSms();
    const racing = signedReceipt(a, 'http-sms', { clientReference: other, deliveryCycle: 1, status: 'failed' });
    const answers = await Promise.all([a.app.inject(racing), b.app.inject(racing)]);
    assert.deepEqual(answers.map((r) => r.statusCode).sort(), [200, 409], answers.map((r) => r.body).join(' | '));
    const row = await stored(a.pool, other);
    assert.equal(row.delivery_cycle, 2, 'reopened exactly once');
    assert.equal(row.status, 'Failed');
  });

  test('a receipt that names neither its deliveryCycle nor a providerMessageId is 400 and changes nothing', async () => {
    const id = await sentSms();
    const before = await stored(a.pool, id);
    const outboxBefore = await outboxCount();
    for (const status of ['failed', 'delivered']) {
      const res = await postReceipt(a, 'http-sms', { clientReference: id, status });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'NTF_WEBHOOK_CYCLE_REQUIRED');
      assert.equal(typeof res.json().message, 'string');
    }
    assert.deepEqual(await stored(a.pool, id), before);
    assert.equal(await outboxCount(), outboxBefore);
    // `NotificationId:DeliveryCycle` as the reference names the cycle as well.
    assert.equal((await postReceipt(a, 'http-sms', { clientReference: `${id}:1`, status: 'delivered' })).json().result, 'confirmed');
  });

  test('a late failure for cycle N never reopens cycle N+1, named by cycle or by cycle N\'s providerMessageId', async () => {
    const id = await sentSms();
    const cycle1ProviderId = (await stored(a.pool, id)).provider_message_id!;
    assert.equal((await postReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'failed' })).json().result, 'reopened');
    await a.runRetry();
    const cycle2 = await stored(a.pool, id);
    assert.equal(cycle2.status, 'Sent');
    assert.equal(cycle2.delivery_cycle, 2);
    assert.notEqual(cycle2.provider_message_id, cycle1ProviderId);
    const eventsBefore = await dispatchedEvents(a.pool, id);

    // Fresh signatures (not replays): the provider reports cycle 1's failure again, later.
    a.clock.advance(1000);
    const byCycle = await postReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'failed' });
    assert.equal(byCycle.statusCode, 200, byCycle.body);
    assert.equal(byCycle.json().result, 'stale_cycle');
    const byProviderId = await postReceipt(a, 'http-sms', { clientReference: id, providerMessageId: cycle1ProviderId, status: 'failed' });
    assert.equal(byProviderId.statusCode, 200, byProviderId.body);
    assert.equal(byProviderId.json().result, 'stale_cycle');

    assert.deepEqual(await stored(a.pool, id), cycle2, 'cycle 2 stays Sent');
    assert.deepEqual(await dispatchedEvents(a.pool, id), eventsBefore);
    // The current cycle's providerMessageId does name the current cycle.
    const current = await postReceipt(a, 'http-sms', { clientReference: id, providerMessageId: cycle2.provider_message_id, status: 'delivered' });
    assert.equal(current.json().result, 'confirmed');
  });

  test('a provider key that is only an Object.prototype property is 404 NTF_WEBHOOK_PROVIDER_UNKNOWN, never a 500', async () => {
    const id = await sentSms();
    for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      const res = await postReceipt(a, key, { clientReference: id, deliveryCycle: 1, status: 'failed' });
      assert.equal(res.statusCode, 404, `${key}: ${res.body}`);
      assert.equal(res.json().code, 'NTF_WEBHOOK_PROVIDER_UNKNOWN', key);
    }
    assert.equal((await stored(a.pool, id)).status, 'Sent');
  });

  test('remembered signatures are deleted by the cleanup job once their window is over; the old receipt is then refused as stale', async () => {
    const c = await w.replica();
    const id = await sentSms(c);
    const request = signedReceipt(c, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'delivered' });
    assert.equal((await c.app.inject(request)).statusCode, 200);
    const { rows } = await c.pool.query<{ expires_at: Date }>(
      `select expires_at from notifications.webhook_replays where provider = 'http-sms' order by expires_at desc limit 1`,
    );
    const windowEnd = Number(request.headers['x-signature-timestamp']) * 1000 + NOTIFICATIONS_DEFAULTS.webhookMaxSkewSeconds * 1000;
    assert.ok(rows[0]!.expires_at.getTime() >= windowEnd, 'kept at least until the signature goes stale');

    const marks = await replayMarks();
    const early = await c.app.platform.runner.runNow(NOTIFICATIONS_CLEANUP_JOB);
    assert.equal(early.outcome, 'success');
    assert.equal(await replayMarks(), marks, 'nothing is deleted inside the window');

    c.clock.advance(NOTIFICATIONS_DEFAULTS.webhookMaxSkewSeconds * 1000 + 10 * 60_000);
    const late = await c.app.platform.runner.runNow(NOTIFICATIONS_CLEANUP_JOB);
    assert.equal(late.counts.replaysDeleted, marks);
    assert.equal(await replayMarks(), 0);
    const replay = await c.app.inject(request);
    assert.equal(replay.statusCode, 401, 'past the window the signature check refuses it');
    assert.equal(replay.json().code, 'NTF_WEBHOOK_SIGNATURE_INVALID');
  });

  test('a signed receipt holding a __proto__ key is 400 BODY_FORBIDDEN_KEY and changes nothing; fields a provider adds are accepted', async () => {
    const id = await sentSms();
    const before = await stored(a.pool, id);
    const outboxBefore = await outboxCount();
    const poisoned = await a.app.inject(signedReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'failed', ...JSON.parse('{"__proto__":{"x":1}}') }));
    assert.deepEqual([poisoned.statusCode, poisoned.json().code], [400, 'BODY_FORBIDDEN_KEY']);
    assert.deepEqual(await stored(a.pool, id), before);
    assert.equal(await outboxCount(), outboxBefore);
    const extended = await a.app.inject(signedReceipt(a, 'http-sms', { clientReference: id, deliveryCycle: 1, status: 'delivered', carrier: 'MTS', receivedAt: 1 }));
    assert.equal(extended.statusCode, 200, extended.body);
  });

  test('a signed receipt whose body is not JSON, or empty, gets the JSON parser\'s 400 code as every route does, and changes nothing', async () => {
    const id = await sentSms();
    const before = await stored(a.pool, id);
    const outboxBefore = await outboxCount();
    const unreadable = await a.app.inject(signedReceipt(a, 'http-sms', {}, { raw: '{"clientReference": "' }));
    assert.deepEqual([unreadable.statusCode, unreadable.json()], [400, { code: 'FST_ERR_CTP_INVALID_JSON_BODY', message: unreadable.json().message }]);
    const empty = await a.app.inject(signedReceipt(a, 'http-sms', {}, { raw: '' }));
    assert.deepEqual([empty.statusCode, empty.json().code], [400, 'FST_ERR_CTP_EMPTY_JSON_BODY']);
    assert.deepEqual(await stored(a.pool, id), before);
    assert.equal(await outboxCount(), outboxBefore);
  });
});
