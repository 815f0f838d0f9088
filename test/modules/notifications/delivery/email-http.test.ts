import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import { crashBetweenAcceptanceAndCommit } from './fixtures/crash.ts';
import { dispatchedEvents, MINUTE, notificationsWorld, notify, postReceipt, setChannel, stored } from '../support.ts';

/**
 * Seed 004 A4/AC6 as written, for Email through the HTTP email provider (http-email): its requests
 * carry `Idempotency-Key: NotificationId:DeliveryCycle` and the provider (a real local HTTP server
 * that dedupes like the real ones) swallows a resend, so a worker SIGKILLed between the acceptance
 * and the commit is simply followed by a resend that ends Sent — one message at the recipient.
 */
const w = await notificationsWorld();
const a = w.main;
await setChannel(a, 'Email', { providerKey: 'http-email', maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
const leaseMs = a.tuning.claimLeaseMs;

describe('email through the HTTP email provider', () => {
  test('A4/AC6: killed after the provider accepted, the resend after the lease is deduped by the provider and the row ends Sent', async () => {
    const address = `buyer-${newId()}@example.org`;
    const { byChannel } = await notify(a, { channels: ['Email'], email: address, title: 'Viewing confirmed' });
    const id = byChannel.get('Email')!.id;
    const first = await crashBetweenAcceptanceAndCommit(w, 'dispatch', id, w.http.hold());
    assert.equal(first.path, '/emails');
    assert.equal(first.idempotencyKey, `${id}:1`);
    assert.deepEqual({ to: first.body.to, subject: first.body.subject, clientReference: first.body.clientReference }, { to: address, subject: 'Viewing confirmed', clientReference: id });
    assert.equal(first.authorization, 'Bearer email-api-credential-0123');
    const crashed = await stored(a.pool, id);
    assert.equal(crashed.status, 'Pending', 'the acceptance never committed');
    assert.equal(crashed.send_intent_cycle, null, 'a provider that dedupes needs no send intent');

    a.clock.set(new Date(Date.now() + leaseMs + 1000));
    await a.runDispatch();
    const requests = w.http.requestsFor(id);
    assert.equal(requests.length, 2, 'sent again after the lease');
    assert.deepEqual(requests.map((r) => r.idempotencyKey), [`${id}:1`, `${id}:1`], 'with the same key');
    const messages = [...w.http.delivered.keys()].filter((k) => k.startsWith(id));
    assert.equal(messages.length, 1, 'one message reached the recipient');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    assert.equal(row.provider_message_id, w.http.delivered.get(`${id}:1`), 'the first acceptance’s message id');
    assert.deepEqual((await dispatchedEvents(a.pool, id)).map((e) => e.payload.Status), ['Sent']);
  });

  test('its delivery webhook is signed with its own secret and applies to Email rows; a 5xx retries with backoff', async () => {
    a.clock.set(new Date());
    w.http.failNext(1, { status: 503 });
    const { byChannel } = await notify(a, { channels: ['Email'], email: `buyer-${newId()}@example.org` });
    const id = byChannel.get('Email')!.id;
    await a.runDispatch();
    const failed = await stored(a.pool, id);
    assert.equal(failed.status, 'Failed');
    assert.equal(failed.last_error, 'NTF_PROVIDER_TRANSIENT');
    a.clock.advance(MINUTE + 1000);
    await a.runRetry();
    assert.equal((await stored(a.pool, id)).status, 'Sent');

    const res = await postReceipt(a, 'http-email', { clientReference: `${id}:1`, status: 'delivered' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().result, 'confirmed');
    const wrong = await postReceipt(a, 'http-sms', { clientReference: `${id}:1`, status: 'failed' });
    assert.equal(wrong.json().result, 'provider_mismatch', 'another provider cannot touch an Email row');
  });
});
