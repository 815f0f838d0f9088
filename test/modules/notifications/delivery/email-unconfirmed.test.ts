import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import { logCapture } from '../../../support/logs.ts';
import { crashBetweenAcceptanceAndCommit, within } from './fixtures/crash.ts';
import { standaloneWorkers } from './fixtures/standalone-worker.ts';
import { dispatchedEvents, metric, MINUTE, notificationsWorld, notify, postReceipt, seedFailed, setChannel, stored, type NtfApp } from '../support.ts';

/**
 * Seed 004 A4/AC6 for Email over SMTP, which cannot dedupe a resend: at most once where it must be.
 * A send the server may have accepted without our knowing — the worker killed (SIGKILL) after the
 * acceptance and before the commit, the reply to the end of DATA late past the timeout, a send cut
 * off by a stop — is never resent by a worker, however long it waits: it is shown as
 * `outcomeUnknown`, counted by `notifications_unconfirmed`, and settled by a delivery webhook or
 * one admin call. A failure before the message was handed over stays retriable.
 */
const w = await notificationsWorld();
const a = w.main;
await setChannel(a, 'Email', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
const leaseMs = a.tuning.claimLeaseMs;
const DAY = 24 * 60 * MINUTE;
const email = () => `buyer-${newId()}@example.org`;

const view = async (app: NtfApp, userId: string, id: string) => {
  const res = await app.app.inject({ method: 'GET', url: `/api/notifications/${id}`, headers: { authorization: `Bearer ${await app.userToken(userId)}` } });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { status: string; outcomeUnknown: boolean; lastError: string | null; version: number };
};
const resolve = (id: string, outcome: unknown) =>
  a.app.inject({ method: 'POST', url: `/api/notifications/unconfirmed/${id}/resolve`, headers: { authorization: `Bearer ${a.adminToken}` }, payload: { outcome } });

describe('email whose send outcome is unknown', () => {
  test('AC6: a worker SIGKILLed between the SMTP server accepting and the commit: never resent, shown and counted as unconfirmed, confirmed as sent by one admin call', async () => {
    const userId = newId();
    const id = await seedFailed(a.pool, { channel: 'Email', address: email(), dueAt: new Date(Date.now() - MINUTE), userId });
    const mail = await crashBetweenAcceptanceAndCommit(w, 'retry', id, w.smtp.hold());
    assert.equal(w.smtp.messagesFor(id).length, 1, 'the SMTP server accepted the mail');

    const crashed = await stored(a.pool, id);
    assert.equal(crashed.status, 'Failed', 'the outcome never committed');
    assert.equal(crashed.send_intent_cycle, 1, 'the intent was recorded before the SMTP call');
    assert.equal(crashed.send_intent_message_id, mail.messageId);

    // Recovery: the lease ran out; runs now, and days later, never claim it again.
    const capture = logCapture('info');
    const solo = standaloneWorkers(a.pool, w.env, a.clock, w.tuning);
    const runRetry = () => within(solo.retry.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log: capture.log, now: () => a.clock.now() }), 'a retry run');
    try {
      for (const later of [leaseMs + 1000, DAY, 30 * DAY]) {
        a.clock.set(new Date(Date.now() + later));
        const counts = await runRetry();
        assert.equal(counts.claimed, 0, 'an unconfirmed send is not claimed');
      }
    } finally {
      await solo.close();
    }
    assert.equal(w.smtp.messagesFor(id).length, 1, 'no second mail, however long it waits');
    const held = await stored(a.pool, id);
    assert.equal(held.attempts, 1, 'unchanged');
    assert.equal(held.send_intent_cycle, 1, 'still unconfirmed');

    const shown = await view(a, userId, id);
    assert.equal(shown.outcomeUnknown, true, 'its REST view says so');
    assert.equal(await metric(a, 'notifications_unconfirmed', { channel: 'Email' }), 1);
    assert.equal(await metric(a, 'notifications_failed_oldest_due_age_seconds', { channel: 'Email' }), 0, 'not a stalled retry');
    const listed = await a.app.inject({ method: 'GET', url: '/api/notifications/unconfirmed', headers: { authorization: `Bearer ${a.adminToken}` } });
    assert.deepEqual(
      (listed.json() as { items: { id: string; messageId: string }[] }).items.map((i) => [i.id, i.messageId]),
      [[id, mail.messageId]],
      'the runbook lists it with the Message-ID to look up',
    );

    const confirmed = await resolve(id, 'sent');
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    const sent = await stored(a.pool, id);
    assert.equal(sent.status, 'Sent');
    assert.equal(sent.provider_message_id, mail.messageId);
    assert.equal(sent.send_intent_cycle, null);
    assert.deepEqual((await dispatchedEvents(a.pool, id)).map((e) => e.payload.Status), ['Sent']);
    assert.equal((await view(a, userId, id)).outcomeUnknown, false);
    assert.equal(await metric(a, 'notifications_unconfirmed', { channel: 'Email' }), 0);

    const again = await resolve(id, 'resend');
    assert.equal(again.statusCode, 409, 'a settled send cannot be resolved again');
    assert.equal(again.json().code, 'NTF_NOTIFICATION_NOT_UNCONFIRMED');
    assert.equal((await stored(a.pool, id)).version, sent.version, 'nothing changed');
  });

  test('A4: a delivered webhook resolves the unconfirmed email as Sent; it is never resent', async () => {
    a.clock.set(new Date());
    const { byChannel } = await notify(a, { channels: ['Email'], email: email() });
    const id = byChannel.get('Email')!.id;
    await crashBetweenAcceptanceAndCommit(w, 'dispatch', id, w.smtp.hold());
    assert.equal((await stored(a.pool, id)).status, 'Pending');

    a.clock.set(new Date(Date.now() + leaseMs + 1000));
    await a.runDispatch();
    await a.runRetry();
    assert.equal(w.smtp.messagesFor(id).length, 1, 'not resent after its lease');

    const res = await postReceipt(a, 'smtp', { clientReference: id, deliveryCycle: 1, status: 'delivered' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().result, 'marked_sent');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    assert.equal(row.send_intent_cycle, null);

    a.clock.advance(DAY);
    await a.runDispatch();
    await a.runRetry();
    assert.equal(w.smtp.messagesFor(id).length, 1, 'no resend');
    assert.deepEqual((await dispatchedEvents(a.pool, id)).map((e) => e.payload.Status), ['Sent']);
  });

  test('the reply to the end of DATA arrives after the timeout: outcome unknown (not a retriable failure), no resend until an admin chooses to resend', async () => {
    a.clock.set(new Date());
    const impatient = await w.replica({}, { ...w.tuning, providerTimeoutMs: 1000 });
    impatient.clock.set(a.clock.now());
    const { userId, byChannel } = await notify(a, { channels: ['Email'], email: email() });
    const id = byChannel.get('Email')!.id;
    const gate = w.smtp.hold();
    try {
      const counts = (await impatient.runDispatch()).counts;
      assert.equal(counts.unconfirmed, 1, 'recorded as unknown');
    } finally {
      gate.release();
    }
    await gate.arrived;
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Failed');
    assert.equal(row.last_error, 'NTF_PROVIDER_OUTCOME_UNKNOWN');
    assert.equal(row.next_attempt_at, null, 'no retry is scheduled');
    assert.equal(row.attempts, 0, 'not counted as a failed attempt');
    assert.equal(row.send_intent_cycle, 1);
    assert.equal((await view(a, userId, id)).outcomeUnknown, true);
    assert.equal(await metric(impatient, 'notifications_outcome_unknown_total', { channel: 'Email' }), 1);

    a.clock.advance(DAY);
    await a.runRetry();
    assert.equal(w.smtp.messagesFor(id).length, 1, 'the late-accepted mail is not sent again');

    const bad = await resolve(id, 'maybe');
    assert.equal(bad.statusCode, 400);
    assert.equal((await stored(a.pool, id)).version, row.version, 'a refused call changes nothing');
    const resent = await resolve(id, 'resend');
    assert.equal(resent.statusCode, 200, resent.body);
    await a.runRetry();
    assert.equal(w.smtp.messagesFor(id).length, 2, 'the operator chose to resend: one more mail');
    const after = await stored(a.pool, id);
    assert.equal(after.status, 'Sent');
    assert.equal(w.smtp.messagesFor(id)[1]!.messageId, w.smtp.messagesFor(id)[0]!.messageId, 'same Message-ID: a client may fold them');
  });

  test('failures before the message was handed over stay retriable: a refused RCPT and a refused connection', async () => {
    a.clock.set(new Date());
    w.smtp.failNext(1, 451);
    const { byChannel } = await notify(a, { channels: ['Email'], email: email() });
    const id = byChannel.get('Email')!.id;
    await a.runDispatch();
    const refused = await stored(a.pool, id);
    assert.equal(refused.status, 'Failed');
    assert.equal(refused.last_error, 'NTF_PROVIDER_TRANSIENT');
    assert.notEqual(refused.next_attempt_at, null, 'a retry is scheduled');
    assert.equal(refused.send_intent_cycle, null, 'the refusal settles the send');
    a.clock.advance(MINUTE + 1000);
    await a.runRetry();
    assert.equal((await stored(a.pool, id)).status, 'Sent');
    assert.equal(w.smtp.messagesFor(id).length, 1);

    const closed = await w.replica({ NOTIFICATIONS_SMTP_PORT: '1' });
    const other = await notify(a, { channels: ['Email'], email: email() });
    const id2 = other.byChannel.get('Email')!.id;
    await closed.runDispatch();
    const down = await stored(a.pool, id2);
    assert.equal(down.status, 'Failed');
    assert.equal(down.last_error, 'NTF_PROVIDER_TRANSIENT');
    assert.equal(down.send_intent_cycle, null);
    assert.notEqual(down.next_attempt_at, null);
  });

  test('an email send cut off by a stop keeps its intent: it is not claimed again', async () => {
    a.clock.set(new Date());
    const id = await seedFailed(a.pool, { channel: 'Email', address: email(), dueAt: new Date(a.clock.now().getTime() - 120 * MINUTE) });
    const solo = standaloneWorkers(a.pool, w.env, a.clock, { ...w.tuning, retryBatchSize: 1 });
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
      assert.equal(next.claimed, 0);
      assert.equal(w.smtp.messagesFor(id).length, 1, 'not resent');
    } finally {
      await solo.close();
    }
  });
});
