import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import { dispatchedEvents, metric, MINUTE, notificationsWorld, notify, seedFailed, setChannel, stored } from '../support.ts';

// One app and providers for the file; each test uses its own recipients and notifications.
const w = await notificationsWorld({}, { notifications: { retryBatchSize: 50 } });
const a = w.main;
const phone = () => `+7999${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;

describe('NotificationRetryWorker (seed 004)', () => {
  test('AC1: a retriable error is retried with backoff until it is sent (N failures → N retries, then Sent)', async () => {
    await setChannel(a, 'Sms', { maxAttempts: 5, retryBackoff: { kind: 'Exponential', initialDelaySeconds: 60, maxDelaySeconds: 3600, multiplier: 2 } });
    const { byChannel } = await notify(a, { channels: ['Sms'], phone: phone() });
    const id = byChannel.get('Sms')!.id;
    w.http.failNext(3, { status: 503 });

    // Dispatcher: the first send fails → Failed, Attempts = 1, NextAttemptAt = now + backoff(1).
    const t0 = a.clock.now();
    await a.runDispatch();
    let row = await stored(a.pool, id);
    assert.equal(row.status, 'Failed');
    assert.equal(row.attempts, 1);
    assert.equal(row.last_error, 'NTF_PROVIDER_TRANSIENT');
    assert.equal(row.terminal, false);
    assert.deepEqual(row.next_attempt_at, new Date(t0.getTime() + 1 * MINUTE));

    // Not due yet: the worker leaves it alone.
    assert.equal((await a.runRetry()).counts.claimed, 0);

    // Each retry waits backoff(n): 1, 2, 4 minutes; the fourth attempt succeeds.
    for (const [attempt, waitMinutes] of [[2, 1], [3, 2], [4, 4]] as const) {
      a.clock.advance(waitMinutes * MINUTE);
      const run = await a.runRetry();
      assert.equal(run.outcome, 'success');
      assert.equal(run.counts.claimed, 1, `retry run for attempt ${attempt}`);
      row = await stored(a.pool, id);
      assert.equal(row.attempts, attempt);
      if (attempt < 4) {
        assert.equal(row.status, 'Failed');
        assert.deepEqual(row.next_attempt_at, new Date(a.clock.now().getTime() + 2 ** (attempt - 1) * MINUTE));
      }
    }
    assert.equal(row.status, 'Sent');
    assert.equal(row.last_error, null);
    assert.equal(row.next_attempt_at, null);
    const requests = w.http.requestsFor(id);
    assert.equal(requests.length, 4);
    assert.ok(requests.every((r) => r.idempotencyKey === `${id}:1`), 'every attempt of the cycle carries NotificationId:1');
    assert.equal(row.provider_message_id, w.http.delivered.get(`${id}:1`));

    // Only the final outcome is announced, atomically with it.
    const events = await dispatchedEvents(a.pool, id);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.topic, 'pin.notifications.dispatched.v1');
    assert.deepEqual({ ...events[0]!.payload, OccurredAt: undefined }, {
      NotificationId: id,
      Channel: 'Sms',
      Status: 'Sent',
      DeliveryCycle: 1,
      ProviderMessageId: row.provider_message_id,
      OccurredAt: undefined,
    });
    assert.equal(await metric(a, 'retry_sent_total', { channel: 'Sms' }), 1);
  });

  test('AC2: past MaxAttempts the notification is terminal Failed with NotificationDispatchedEvent(Failed) and the alert metric', async () => {
    await setChannel(a, 'Sms', { maxAttempts: 3, retryBackoff: { kind: 'Fixed', delaySeconds: 30 } });
    const { byChannel } = await notify(a, { channels: ['Sms'], phone: phone() });
    const id = byChannel.get('Sms')!.id;
    w.http.setRule((r) => (r.body.clientReference === id ? { status: 500 } : undefined));
    const alertsBefore = await metric(a, 'notifications_terminal_failures_total', { channel: 'Sms', reason: 'max_attempts' });

    await a.runDispatch();
    for (let i = 0; i < 2; i++) {
      assert.equal((await dispatchedEvents(a.pool, id)).length, 0, 'intermediate failures publish nothing');
      a.clock.advance(30_000);
      await a.runRetry();
    }
    w.http.setRule(null);
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Failed');
    assert.equal(row.terminal, true);
    assert.equal(row.attempts, 3);
    assert.equal(row.last_error, 'NTF_PROVIDER_TRANSIENT');
    const events = await dispatchedEvents(a.pool, id);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.payload.Status, 'Failed');
    assert.equal(events[0]!.payload.ErrorCode, 'NTF_PROVIDER_TRANSIENT');
    assert.equal(events[0]!.payload.DeliveryCycle, 1);
    assert.equal(await metric(a, 'notifications_terminal_failures_total', { channel: 'Sms', reason: 'max_attempts' }), alertsBefore + 1);
  });

  test('A1: a terminal Failed leaves the retry cycle for manual review and never reaches a DLQ', async () => {
    await setChannel(a, 'Sms', { maxAttempts: 2, retryBackoff: { kind: 'Fixed', delaySeconds: 10 } });
    const id = await seedFailed(a.pool, { channel: 'Sms', address: phone(), attempts: 1, dueAt: a.clock.now() });
    w.http.failNext(1, { status: 502 });
    assert.equal((await a.runRetry()).counts.terminal, 1);
    const terminal = await stored(a.pool, id);
    assert.equal(terminal.terminal, true);
    assert.equal(terminal.next_attempt_at, null);

    // Later cycles do not pick it up again, however much time passes.
    for (let i = 0; i < 3; i++) {
      a.clock.advance(60 * MINUTE);
      await a.runRetry();
    }
    assert.equal(w.http.requestsFor(id).length, 1);
    assert.deepEqual(await stored(a.pool, id), terminal);
    // The worker never uses a dead-letter topic: the outcome is an outbox event, not a DLQ message.
    const { rows } = await a.pool.query(`select topic from platform.outbox where key = $1`, [id]);
    assert.deepEqual(rows.map((r) => r.topic), ['pin.notifications.dispatched.v1']);
  });

  test('AC3: a non-retriable error (invalid recipient) is terminal at once, without retries', async () => {
    await setChannel(a, 'Sms', { maxAttempts: 5 });
    const bad = '+70000000000';
    w.http.setRule((r) => (r.body.to === bad ? { status: 400, body: { error: { code: 'INVALID_RECIPIENT' } } } : undefined));
    const { byChannel } = await notify(a, { channels: ['Sms'], phone: bad });
    const id = byChannel.get('Sms')!.id;

    await a.runDispatch();
    a.clock.advance(120 * MINUTE);
    await a.runRetry();
    w.http.setRule(null);

    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Failed');
    assert.equal(row.terminal, true);
    assert.equal(row.attempts, 1);
    assert.equal(row.last_error, 'NTF_PROVIDER_INVALID_RECIPIENT');
    assert.equal(w.http.requestsFor(id).length, 1);
    const [event] = await dispatchedEvents(a.pool, id);
    assert.equal(event!.payload.Status, 'Failed');
    assert.equal(event!.payload.ErrorCode, 'NTF_PROVIDER_INVALID_RECIPIENT');
  });

  test('A2: an invalid push token fails terminally at once and the token is deleted from the store', async () => {
    await setChannel(a, 'Push', { maxAttempts: 5 });
    const userId = newId();
    const deadToken = `dead-token-${newId()}`;
    const liveToken = `live-token-${newId()}`;
    for (const token of [deadToken, liveToken]) {
      const res = await a.app.inject({
        method: 'POST',
        url: '/api/notifications/push-tokens',
        headers: { authorization: `Bearer ${await a.userToken(userId)}` },
        payload: { token, platform: 'android' },
      });
      assert.equal(res.statusCode, 204);
    }
    w.http.setRule((r) => (r.body.token === deadToken ? { status: 404, body: { error: { code: 'UNREGISTERED' } } } : undefined));
    const { all } = await notify(a, { recipientUserId: userId, channels: ['Push'] });
    await a.runDispatch();
    w.http.setRule(null);

    const pushes = await Promise.all(all.filter((n) => n.channel === 'Push').map((n) => stored(a.pool, n.id)));
    assert.equal(pushes.length, 2, 'one push per registered device');
    const failed = pushes.filter((p) => p.status === 'Failed');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]!.terminal, true);
    assert.equal(failed[0]!.attempts, 1);
    assert.equal(failed[0]!.last_error, 'NTF_PUSH_TOKEN_INVALID');
    assert.equal(pushes.filter((p) => p.status === 'Sent').length, 1, 'the other device still gets it');
    const { rows } = await a.pool.query<{ token: string }>('select token from notifications.push_tokens where user_id = $1', [userId]);
    assert.deepEqual(rows.map((r) => r.token), [liveToken]);
    assert.equal(await metric(a, 'notifications_push_tokens_deleted_total'), 1);
  });

  test('A3: a disabled channel gets no attempt and is counted; its notifications go out once it is enabled', async () => {
    await setChannel(a, 'Email', { isEnabled: false });
    const { byChannel } = await notify(a, { channels: ['Email'], email: 'buyer@example.org' });
    const id = byChannel.get('Email')!.id;
    assert.equal(await metric(a, 'notifications_skipped_total', { channel: 'Email', reason: 'channel_disabled' }), 1);

    await a.runDispatch();
    await a.runRetry();
    assert.equal((await stored(a.pool, id)).status, 'Pending');
    assert.equal((await stored(a.pool, id)).attempts, 0);
    assert.equal(w.smtp.messages.filter((m) => m.notificationId === id).length, 0);
    assert.equal(await metric(a, 'notifications_waiting', { channel: 'Email', reason: 'channel_disabled' }), 1);

    await setChannel(a, 'Email', { isEnabled: true });
    await a.runDispatch();
    assert.equal((await stored(a.pool, id)).status, 'Sent');
    assert.equal(w.smtp.messages.filter((m) => m.notificationId === id).length, 1);
    assert.equal(await metric(a, 'notifications_waiting', { channel: 'Email' }), 0);
  });

  test('A3: the retry worker counts the due Failed rows it skips for a disabled channel (channel-disabled), once per run, without an attempt', async () => {
    await setChannel(a, 'Email', { isEnabled: false });
    const skipped = () => metric(a, 'notifications_skipped_total', { channel: 'Email', reason: 'channel_disabled' });
    const before = await skipped();
    const due = [];
    for (let i = 0; i < 2; i++) due.push(await seedFailed(a.pool, { channel: 'Email', address: 'buyer@example.org', dueAt: a.clock.now() }));
    await seedFailed(a.pool, { channel: 'Email', address: 'buyer@example.org', dueAt: new Date(a.clock.now().getTime() + 10 * MINUTE) });

    const run = await a.runRetry();
    assert.equal(await skipped(), before + 2, 'the two due rows, not the one due later');
    assert.ok((run.counts.skipped ?? 0) >= 2, 'the run reports them');
    for (const id of due) assert.equal((await stored(a.pool, id)).attempts, 1, 'no attempt');
    await a.runRetry();
    assert.equal(await skipped(), before + 4, 'a skip per run that passed them over');

    await setChannel(a, 'Email', { isEnabled: true });
    await a.runRetry();
    assert.equal(await skipped(), before + 4, 'an enabled channel is sent, not skipped');
    for (const id of due) assert.equal((await stored(a.pool, id)).status, 'Sent');
  });

  test('A3: a declared-only provider (Telegram) answers NTF_PROVIDER_NOT_IMPLEMENTED: rows wait and never starve the batch', async () => {
    await setChannel(a, 'Telegram', { isEnabled: true });
    await setChannel(a, 'Sms', { maxAttempts: 5 });
    const longAgo = new Date(a.clock.now().getTime() - 60 * MINUTE);
    // More waiting rows than a batch holds, all due earlier than the one that can be sent.
    const waiting = [];
    for (let i = 0; i < 60; i++) waiting.push(await seedFailed(a.pool, { channel: 'Telegram', address: '@someone', dueAt: longAgo }));
    const sendable = await seedFailed(a.pool, { channel: 'Sms', address: phone(), dueAt: a.clock.now() });

    const run = await a.runRetry();
    assert.equal(run.counts.claimed, 1, 'only the row whose channel can send is claimed');
    assert.equal(run.counts.sent, 1);
    assert.equal((await stored(a.pool, sendable)).status, 'Sent');
    for (const id of waiting.slice(0, 3)) {
      const row = await stored(a.pool, id);
      assert.equal(row.status, 'Failed');
      assert.equal(row.attempts, 1, 'no attempt is counted for a channel that cannot send');
    }
    assert.ok((await metric(a, 'notifications_waiting', { channel: 'Telegram', reason: 'provider_not_implemented' })) >= 60);
    await setChannel(a, 'Telegram', { isEnabled: false });
  });

  test('A1: rows whose Attempts already reach a lowered MaxAttempts become terminal with their event, without another send', async () => {
    await setChannel(a, 'Sms', { maxAttempts: 5 });
    const id = await seedFailed(a.pool, { channel: 'Sms', address: phone(), attempts: 4, dueAt: a.clock.now() });
    await setChannel(a, 'Sms', { maxAttempts: 3 });
    const run = await a.runRetry();
    assert.equal(run.counts.terminal, 1);
    const row = await stored(a.pool, id);
    assert.equal(row.terminal, true);
    assert.equal(w.http.requestsFor(id).length, 0);
    const [event] = await dispatchedEvents(a.pool, id);
    assert.equal(event!.payload.Status, 'Failed');
    assert.equal(event!.payload.ErrorCode, 'NTF_PROVIDER_TRANSIENT');
  });
});
