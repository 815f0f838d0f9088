import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import { logCapture } from '../../../support/logs.ts';
import { metricValue } from '../../../support/metrics.ts';
import { crashBetweenAcceptanceAndCommit, within } from './fixtures/crash.ts';
import { standaloneWorkers } from './fixtures/standalone-worker.ts';
import { dispatchedEvents, MINUTE, notificationsWorld, notify, postReceipt, seedFailed, setChannel, stored } from '../support.ts';

/**
 * Seed 004 A4/AC6 for Email, whose provider (SMTP) cannot dedupe a resend: a worker killed after
 * the SMTP server accepted the mail and before the outcome committed leaves a send intent; the
 * recovered row is not resent before a delivered webhook or NOTIFICATIONS_UNCONFIRMED_TIMEOUT_SECONDS.
 */
const w = await notificationsWorld();
const a = w.main;
await setChannel(a, 'Email', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
const leaseMs = a.config.NOTIFICATIONS_CLAIM_LEASE_SECONDS * 1000;
const timeoutMs = a.config.NOTIFICATIONS_UNCONFIRMED_TIMEOUT_SECONDS * 1000;
const email = () => `buyer-${newId()}@example.org`;

describe('email whose send outcome was lost', () => {
  test('AC6: a worker killed between the SMTP server accepting and the commit: no second mail before the timeout, then exactly one resend', async () => {
    const id = await seedFailed(a.pool, { channel: 'Email', address: email(), dueAt: new Date(Date.now() - MINUTE) });
    const mail = await crashBetweenAcceptanceAndCommit(w, 'retry', id, w.smtp.hold());
    assert.equal(w.smtp.messagesFor(id).length, 1, 'the SMTP server accepted the mail');

    const crashed = await stored(a.pool, id);
    assert.equal(crashed.status, 'Failed', 'the outcome never committed');
    assert.equal(crashed.attempts, 1);
    assert.equal(crashed.send_intent_cycle, 1, 'the intent was recorded before the SMTP call');
    assert.equal(crashed.send_intent_message_id, mail.messageId);
    const intentAt = crashed.send_intent_at!;

    // Recovery: the lease ran out and the row is claimed again — but held, not resent.
    const capture = logCapture('info');
    const solo = standaloneWorkers(a.pool, w.env, a.clock);
    const runRetry = () => within(solo.retry.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log: capture.log, now: () => a.clock.now() }), 'a retry run');
    try {
      a.clock.set(new Date(Date.now() + leaseMs + 1000));
      const recovered = await runRetry();
      assert.equal(recovered.unconfirmed, 1);
      assert.equal(w.smtp.messagesFor(id).length, 1, 'no second mail');
      const held = await stored(a.pool, id);
      assert.equal(held.status, 'Failed');
      assert.equal(held.attempts, 1, 'holding back is not an attempt');
      assert.equal(held.lease_owner, null);
      assert.deepEqual(held.lease_expires_at, new Date(intentAt.getTime() + timeoutMs), 'held until the intent times out');
      assert.equal(await metricValue(solo.registry, 'notifications_unconfirmed_send_waits_total', { channel: 'Email' }), 1);
      const line = capture.lines().find((l) => l.notificationId === id && String(l.msg).startsWith('send outcome unknown'));
      assert.ok(line, 'the wait is logged');
      assert.equal(line.level, 40);
      assert.equal(line.messageId, mail.messageId);

      // Still within the timeout: nothing goes out, however often the worker runs.
      a.clock.set(new Date(intentAt.getTime() + timeoutMs - 1000));
      await runRetry();
      await runRetry();
      assert.equal(w.smtp.messagesFor(id).length, 1, 'no second mail before the timeout');

      // Past the timeout with no webhook: exactly one resend, which is recorded.
      a.clock.set(new Date(intentAt.getTime() + timeoutMs + 1000));
      await runRetry();
      assert.equal(w.smtp.messagesFor(id).length, 2, 'one resend after the timeout');
      assert.equal(await metricValue(solo.registry, 'notifications_unconfirmed_resends_total', { channel: 'Email' }), 1);
      const sent = await stored(a.pool, id);
      assert.equal(sent.status, 'Sent');
      assert.equal(sent.attempts, 2);
      assert.equal(sent.send_intent_cycle, null, 'the recorded outcome resolves the intent');
      assert.equal((await dispatchedEvents(a.pool, id)).length, 1);

      a.clock.advance(60 * MINUTE);
      await runRetry();
      assert.equal(w.smtp.messagesFor(id).length, 2, 'nothing more');
    } finally {
      await solo.close();
    }
  });

  test('A4: a delivered webhook within the window resolves the unconfirmed email as Sent; it is never resent', async () => {
    a.clock.set(new Date());
    const { byChannel } = await notify(a, { channels: ['Email'], email: email() });
    const id = byChannel.get('Email')!.id;
    await crashBetweenAcceptanceAndCommit(w, 'dispatch', id, w.smtp.hold());
    const crashed = await stored(a.pool, id);
    assert.equal(crashed.status, 'Pending');
    assert.equal(crashed.send_intent_cycle, 1);

    // The dispatcher takes it again once the lease ran out, and holds it.
    a.clock.set(new Date(Date.now() + leaseMs + 1000));
    assert.equal((await a.runDispatch()).counts.unconfirmed, 1);
    assert.equal(w.smtp.messagesFor(id).length, 1);

    const res = await postReceipt(a, 'smtp', { clientReference: id, deliveryCycle: 1, status: 'delivered' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().result, 'marked_sent');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    assert.equal(row.send_intent_cycle, null);
    assert.notEqual(row.delivered_at, null);

    a.clock.advance(timeoutMs + 60 * MINUTE);
    await a.runDispatch();
    await a.runRetry();
    assert.equal(w.smtp.messagesFor(id).length, 1, 'no resend');
    const events = await dispatchedEvents(a.pool, id);
    assert.deepEqual(events.map((e) => e.payload.Status), ['Sent']);
  });

  test('an email send cut off by a stop keeps its intent: the next run holds it instead of resending at once', async () => {
    a.clock.set(new Date());
    const id = await seedFailed(a.pool, { channel: 'Email', address: email(), dueAt: new Date(a.clock.now().getTime() - 120 * MINUTE) });
    const solo = standaloneWorkers(a.pool, { ...w.env, NOTIFICATIONS_RETRY_BATCH_SIZE: '1' }, a.clock);
    const gate = w.smtp.hold();
    const stop = new AbortController();
    try {
      const run = solo.retry.runOnce({ jobRunId: newId(), signal: stop.signal, log: solo.log, now: () => a.clock.now() });
      await within(gate.arrived, 'the mail to reach the SMTP server');
      stop.abort();
      const counts = await within(run, 'the stopped run to end');
      assert.equal(counts.released, 1);
    } finally {
      gate.release();
    }
    const cut = await stored(a.pool, id);
    assert.equal(cut.attempts, 1, 'the cut-off send used no attempt');
    assert.equal(cut.lease_owner, null);
    assert.equal(cut.send_intent_cycle, 1, 'whether the mail went out is unknown');
    try {
      const next = await solo.retry.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log: solo.log, now: () => a.clock.now() });
      assert.equal(next.unconfirmed, 1);
      assert.equal(w.smtp.messagesFor(id).length, 1, 'not resent at once');
    } finally {
      await solo.close();
    }
  });
});
