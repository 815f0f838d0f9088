import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../src/platform/time.ts';
import { connectClient, type TestClient } from '../../support/signalr.ts';
import { waitFor } from '../../support/wait.ts';
import { notificationsWorld, notify, postReceipt, seedFailed, setChannel, stored } from './support.ts';

/**
 * Seed 004's domain event NotificationStatusChanged on the hub, on every transition (stored with the
 * change in the realtime outbox, pushed by the messenger's realtime dispatcher), and mark-read straight from
 * notification_created.
 */

const w = await notificationsWorld({}, { notifications: { maxReopens: 0 } });
const a = w.main;
await a.app.listen({ host: '127.0.0.1', port: 0 });
const hubUrl = `http://127.0.0.1:${(a.app.server.address() as { port: number }).port}/hubs/messenger`;
const EVENTS = ['notification_created', 'notification_status_changed'];

type Frame = Record<string, unknown>;
const framesOf = (c: TestClient, event: string, id: string): Frame[] =>
  c.received.filter((r) => r.event === event && (r.payload as Frame).NotificationId === id).map((r) => r.payload as Frame);

async function markRead(userId: string, id: string, version: unknown) {
  return a.app.inject({
    method: 'POST',
    url: `/api/notifications/${id}/read`,
    headers: { authorization: `Bearer ${await a.userToken(userId)}` },
    payload: { version },
  });
}

describe('notification_status_changed and notification_created on user:{UserId}', () => {
  test('notification_created carries the Version mark-read expects: read straight away, no 409; both devices get the read status', async () => {
    const userId = newId();
    const phone = await connectClient(hubUrl, await a.userToken(userId), { events: EVENTS });
    const laptop = await connectClient(hubUrl, await a.userToken(userId), { events: EVENTS });
    const { byChannel } = await notify(a, { recipientUserId: userId, title: 'Viewing confirmed' });
    const id = byChannel.get('InApp')!.id;
    await a.runDispatch();
    await waitFor('notification_created', () => framesOf(phone, 'notification_created', id).length === 1);
    const created = framesOf(phone, 'notification_created', id)[0]!;
    assert.equal(created.Version, (await stored(a.pool, id)).version);

    const read = await markRead(userId, id, created.Version);
    assert.equal(read.statusCode, 200, read.body);
    await a.runStatusEvents();
    for (const device of [phone, laptop]) {
      await waitFor('notification_status_changed', () => framesOf(device, 'notification_status_changed', id).length === 1);
    }
    const changed = framesOf(laptop, 'notification_status_changed', id)[0]!;
    assert.equal(changed.Channel, 'InApp');
    assert.equal(changed.Status, 'Sent');
    assert.equal(changed.ReadAt, read.json().readAt);
    assert.equal(changed.Version, read.json().version);
    // The delivery itself announced nothing besides notification_created.
    assert.equal(framesOf(phone, 'notification_status_changed', id).length, 1);

    const again = await markRead(userId, id, changed.Version);
    assert.equal(again.statusCode, 200, 'already read: answered as is');
    await a.runStatusEvents();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(framesOf(phone, 'notification_status_changed', id).length, 1, 'a second read announces nothing');
  });

  test('the Version a frame announces also marks in the moment before its delivery is recorded; the delivery then re-applies Sent on top', async () => {
    const { userId, byChannel } = await notify(a, {});
    const row = byChannel.get('InApp')!;
    const read = await markRead(userId, row.id, row.version + 1);
    assert.equal(read.statusCode, 200, read.body);
    assert.equal((await markRead(newId(), row.id, row.version + 1)).statusCode, 404, 'someone else’s notification stays hidden');
    const tooFar = await notify(a, {});
    assert.equal((await markRead(tooFar.userId, tooFar.all[0]!.id, tooFar.all[0]!.version + 2)).statusCode, 409);

    await a.runDispatch();
    const after = await stored(a.pool, row.id);
    assert.equal(after.status, 'Sent');
    assert.notEqual(after.read_at, null);
  });

  test('an external delivery that becomes Sent, Failed to be retried, or terminally Failed, is announced', async () => {
    await setChannel(a, 'Sms', { maxAttempts: 2, retryBackoff: { kind: 'Fixed', delaySeconds: 30 } });
    await setChannel(a, 'Email', { maxAttempts: 3 });
    const userId = newId();
    const client = await connectClient(hubUrl, await a.userToken(userId), { events: EVENTS });
    w.smtp.unknownMailboxes.add('nobody@example.org');
    const { byChannel } = await notify(a, { recipientUserId: userId, channels: ['Sms', 'Email'], phone: '+79990001122', email: 'nobody@example.org' });
    const sms = byChannel.get('Sms')!.id;
    const email = byChannel.get('Email')!.id;
    w.http.failNext(1, { status: 503 });
    await a.runDispatch();
    await a.runStatusEvents();

    await waitFor('the email’s terminal failure', () => framesOf(client, 'notification_status_changed', email).length === 1);
    const failed = framesOf(client, 'notification_status_changed', email)[0]!;
    assert.deepEqual(
      { Channel: failed.Channel, Status: failed.Status, Terminal: failed.Terminal, ErrorCode: failed.ErrorCode, Version: failed.Version },
      { Channel: 'Email', Status: 'Failed', Terminal: true, ErrorCode: 'NTF_PROVIDER_INVALID_RECIPIENT', Version: (await stored(a.pool, email)).version },
    );
    await waitFor('the SMS’s retriable failure', () => framesOf(client, 'notification_status_changed', sms).length === 1);
    const retried = framesOf(client, 'notification_status_changed', sms)[0]!;
    assert.deepEqual(
      { Status: retried.Status, Terminal: retried.Terminal, ErrorCode: retried.ErrorCode, Version: retried.Version },
      { Status: 'Failed', Terminal: false, ErrorCode: 'NTF_PROVIDER_TRANSIENT', Version: (await stored(a.pool, sms)).version },
      'a failure that will be retried is announced too',
    );

    a.clock.advance(30_000);
    await a.runRetry();
    await a.runStatusEvents();
    await waitFor('the SMS Sent', () => framesOf(client, 'notification_status_changed', sms).length === 2);
    const sent = framesOf(client, 'notification_status_changed', sms)[1]!;
    assert.equal(sent.Status, 'Sent');
    assert.equal(sent.Terminal, false);
    assert.equal(sent.DeliveryCycle, 1);
    assert.equal(sent.Version, (await stored(a.pool, sms)).version);
  });

  test('a delivery receipt that records Sent or terminal Failed is announced too', async () => {
    await setChannel(a, 'Sms', { maxAttempts: 5 });
    const userId = newId();
    const client = await connectClient(hubUrl, await a.userToken(userId), { events: EVENTS });
    const accepted = await seedFailed(a.pool, { channel: 'Sms', address: '+79990003344', dueAt: a.clock.now(), userId });
    const marked = await postReceipt(a, 'http-sms', { clientReference: `${accepted}:1`, status: 'delivered', providerMessageId: 'gw-7' });
    assert.equal(marked.json().result, 'marked_sent');
    await a.runStatusEvents();
    await waitFor('Sent by receipt', () => framesOf(client, 'notification_status_changed', accepted).length === 1);
    assert.equal(framesOf(client, 'notification_status_changed', accepted)[0]!.Status, 'Sent');

    // maxReopens 0: a failed receipt for a Sent row is final.
    const lost = await postReceipt(a, 'http-sms', { clientReference: `${accepted}:1`, status: 'failed', providerMessageId: 'gw-7' });
    assert.equal(lost.json().result, 'terminal');
    await a.runStatusEvents();
    await waitFor('terminal by receipt', () => framesOf(client, 'notification_status_changed', accepted).length === 2);
    const terminal = framesOf(client, 'notification_status_changed', accepted)[1]!;
    assert.equal(terminal.Status, 'Failed');
    assert.equal(terminal.Terminal, true);
    assert.equal(terminal.ErrorCode, 'NTF_PROVIDER_DELIVERY_FAILED');
    assert.equal(terminal.Version, (await stored(a.pool, accepted)).version);
  });
});
