import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { newId } from '../../../src/platform/time.ts';
import { connectClient } from '../../support/signalr.ts';
import { dispatchedEvents, notificationsWorld, notify, setChannel, stored } from './support.ts';
import { waitFor } from '../../support/wait.ts';
import { Value } from '@sinclair/typebox/value';
import { NotificationCreatedFrame } from '../../../src/modules/notifications/providers/in-app.ts';

const w = await notificationsWorld();
const a = w.main;
await a.app.listen({ host: '127.0.0.1', port: 0 });
const { port } = a.app.server.address() as { port: number };
const hubUrl = `http://127.0.0.1:${port}/hubs/messenger`;
const auth = (token: string) => ({ authorization: `Bearer ${token}` });

describe('notifications REST and in-app delivery', () => {
  test('AC5: the in-app copy is delivered in realtime (Sent) even when the external channel fails terminally', async () => {
    await setChannel(a, 'Email', { maxAttempts: 3 });
    const userId = newId();
    const client = await connectClient(hubUrl, await a.userToken(userId), { events: ['notification_created'] });
    w.smtp.unknownMailboxes.add('gone@example.org');

    const { byChannel } = await notify(a, { recipientUserId: userId, title: 'Deal signed', channels: ['Email'], email: 'gone@example.org' });
    await a.runDispatch();

    const email = await stored(a.pool, byChannel.get('Email')!.id);
    assert.equal(email.status, 'Failed');
    assert.equal(email.terminal, true);
    assert.equal(email.last_error, 'NTF_PROVIDER_INVALID_RECIPIENT');
    const inApp = await stored(a.pool, byChannel.get('InApp')!.id);
    assert.equal(inApp.status, 'Sent');
    await waitFor('the notification_created frame', () => client.received.length === 1);
    const frame = client.received[0]!.payload as Record<string, unknown>;
    assert.equal(frame.NotificationId, inApp.id);
    assert.equal(frame.Title, 'Deal signed');
    assert.deepEqual([...Value.Errors(NotificationCreatedFrame, frame)].map((e) => `${e.path}: ${e.message}`), [], 'the frame matches its published schema');
    assert.deepEqual((await dispatchedEvents(a.pool, inApp.id)).map((e) => [e.payload.Channel, e.payload.Status]), [['InApp', 'Sent']]);
  });

  test('email goes over SMTP with a Message-ID derived from the NotificationId; a 4xx reply is retried', async () => {
    await setChannel(a, 'Email', { maxAttempts: 3, retryBackoff: { kind: 'Fixed', delaySeconds: 30 } });
    w.smtp.failNext(1, 451);
    const { byChannel } = await notify(a, { channels: ['Email'], email: 'buyer@example.org' });
    const id = byChannel.get('Email')!.id;
    await a.runDispatch();
    assert.equal((await stored(a.pool, id)).last_error, 'NTF_PROVIDER_TRANSIENT');
    a.clock.advance(30_000);
    await a.runRetry();
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    const mails = w.smtp.messages.filter((m) => m.notificationId === id);
    assert.equal(mails.length, 1);
    assert.deepEqual(mails[0]!.to, ['buyer@example.org']);
    assert.equal(mails[0]!.messageId, `<${id}.1@notifications.pin.local>`);
    assert.equal(row.provider_message_id, `<${id}.1@notifications.pin.local>`);
  });

  test("the Message-ID's domain is the domain of the From address (NOTIFICATIONS_SMTP_FROM); a From without one is refused at start", async () => {
    const shop = await w.replica({ NOTIFICATIONS_SMTP_FROM: 'Shop <no-reply@mail.shop.example>' });
    await setChannel(a, 'Email', { maxAttempts: 3 });
    const { byChannel } = await notify(a, { channels: ['Email'], email: 'buyer@example.org' });
    const id = byChannel.get('Email')!.id;
    await shop.runDispatch();
    const mails = w.smtp.messages.filter((m) => m.notificationId === id);
    assert.equal(mails.length, 1);
    assert.equal(mails[0]!.messageId, `<${id}.1@mail.shop.example>`);
    assert.equal((await stored(a.pool, id)).provider_message_id, `<${id}.1@mail.shop.example>`);
    for (const from of ['PIN', 'PIN <no-reply>', 'no-reply@']) {
      assert.throws(() => loadConfig({ NOTIFICATIONS_SMTP_FROM: from }), (e: unknown) => e instanceof ConfigError && e.problems.some((p) => p.startsWith('NOTIFICATIONS_SMTP_FROM:')), from);
    }
  });

  test('creating notifications needs an admin (system) token and the address of each external channel', async () => {
    const userToken = await a.userToken(newId());
    const asUser = await a.app.inject({ method: 'POST', url: '/api/notifications', headers: auth(userToken), payload: { recipientUserId: newId(), title: 'x' } });
    assert.equal(asUser.statusCode, 403);
    const noEmail = await a.app.inject({
      method: 'POST',
      url: '/api/notifications',
      headers: auth(a.adminToken),
      payload: { recipientUserId: newId(), title: 'x', channels: ['Email'] },
    });
    assert.equal(noEmail.statusCode, 400);
    assert.equal(noEmail.json().code, 'NTF_RECIPIENT_ADDRESS_REQUIRED');
    const badPhone = await a.app.inject({
      method: 'POST',
      url: '/api/notifications',
      headers: auth(a.adminToken),
      payload: { recipientUserId: newId(), title: 'x', channels: ['Sms'], phone: '8-999' },
    });
    assert.equal(badPhone.statusCode, 400);
    assert.equal(Number((await a.pool.query('select count(*) from notifications.notifications where title = $1', ['x'])).rows[0].count), 0);
  });

  test('the feed lists only the caller\'s in-app notifications, newest first, page by page', async () => {
    const userId = newId();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await notify(a, { recipientUserId: userId, title: `n${i}`, channels: ['Sms'], phone: '+79990000001' })).byChannel.get('InApp')!.id);
    await notify(a, { title: 'someone else' });
    const token = await a.userToken(userId);

    const first = await a.app.inject({ method: 'GET', url: '/api/notifications?limit=2', headers: auth(token) });
    assert.equal(first.statusCode, 200);
    const page1 = first.json();
    assert.deepEqual(page1.items.map((n: { id: string }) => n.id), [ids[2], ids[1]]);
    assert.ok(page1.items.every((n: { channel: string }) => n.channel === 'InApp'));
    const second = await a.app.inject({ method: 'GET', url: `/api/notifications?limit=2&before=${page1.nextBefore}`, headers: auth(token) });
    assert.deepEqual(second.json().items.map((n: { id: string }) => n.id), [ids[0]]);
    assert.equal(second.json().nextBefore, null);
    assert.ok(!JSON.stringify(page1).includes('+79990000001'), 'addresses are never echoed');

    const other = await a.app.inject({ method: 'POST', url: `/api/notifications/${ids[0]}/read`, headers: auth(await a.userToken(newId())), payload: { version: 1 } });
    assert.equal(other.statusCode, 404);
    assert.equal((await a.app.inject({ method: 'GET', url: '/api/notifications' })).statusCode, 401);
  });

  test('channel config: admin only, provider must serve the channel, backoff validated, providerState reported', async () => {
    const put = (channel: string, payload: Record<string, unknown>, token = a.adminToken) =>
      a.app.inject({ method: 'PUT', url: `/api/notifications/channels/${channel}`, headers: auth(token), payload });
    const ok = await put('Sms', { isEnabled: true, providerKey: 'http-sms', maxAttempts: 4, retryBackoff: { kind: 'Exponential', initialDelaySeconds: 10, maxDelaySeconds: 600, multiplier: 3 } });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().providerState, 'available');
    assert.deepEqual(ok.json().retryBackoff, { kind: 'Exponential', initialDelaySeconds: 10, maxDelaySeconds: 600, multiplier: 3 });

    assert.equal((await put('Sms', { isEnabled: true, providerKey: 'smtp', maxAttempts: 4, retryBackoff: { kind: 'Fixed', delaySeconds: 5 } })).json().code, 'NTF_CHANNEL_PROVIDER_INVALID');
    const badBackoff = await put('Sms', { isEnabled: true, providerKey: 'http-sms', maxAttempts: 4, retryBackoff: { kind: 'Exponential', initialDelaySeconds: 100, maxDelaySeconds: 10 } });
    assert.equal(badBackoff.json().code, 'NTF_CHANNEL_BACKOFF_INVALID');
    assert.equal((await put('Sms', { isEnabled: true, providerKey: 'http-sms', maxAttempts: 0, retryBackoff: { kind: 'Fixed', delaySeconds: 5 } })).statusCode, 400);
    assert.equal((await put('Fax', { isEnabled: true, providerKey: 'http-sms', maxAttempts: 1, retryBackoff: { kind: 'Fixed', delaySeconds: 5 } })).statusCode, 400);
    assert.equal((await put('Sms', { isEnabled: true, providerKey: 'http-sms', maxAttempts: 1, retryBackoff: { kind: 'Fixed', delaySeconds: 5 } }, await a.userToken(newId()))).statusCode, 403);

    const list = await a.app.inject({ method: 'GET', url: '/api/notifications/channels', headers: auth(a.adminToken) });
    const byName = new Map(list.json().channels.map((c: { channel: string }) => [c.channel, c]));
    assert.equal((byName.get('Viber') as { providerState: string }).providerState, 'not_implemented');
    assert.equal((byName.get('Sms') as { maxAttempts: number }).maxAttempts, 4, 'the rejected PUTs changed nothing');
  });

  test('/metrics exports what on-call needs: retry_sent_total, backlog, waiting, terminal failures', async () => {
    const res = await a.app.inject({ method: 'GET', url: '/metrics' });
    for (const name of [
      'retry_sent_total',
      'notifications_failed_backlog',
      'notifications_failed_oldest_due_age_seconds',
      'notifications_waiting',
      'notifications_terminal_failures_total',
      'notifications_skipped_total',
      'notifications_send_attempts_total',
    ]) {
      assert.match(res.body, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
    assert.match(res.body, /^notifications_terminal_failures_total\{channel="Email",reason="non_retriable",code="NTF_PROVIDER_INVALID_RECIPIENT"\} 1$/m);
  });

  test('every notifications route is published in the OpenAPI document', async () => {
    const doc = (await a.app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, Record<string, unknown>> };
    for (const [path, method] of [
      ['/api/notifications', 'post'],
      ['/api/notifications', 'get'],
      ['/api/notifications/{id}/read', 'post'],
      ['/api/notifications/channels/{channel}', 'put'],
      ['/api/notifications/providers/{providerKey}/webhook', 'post'],
      ['/api/notifications/push-tokens', 'post'],
    ] as const) {
      assert.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path}`);
    }
  });
});
