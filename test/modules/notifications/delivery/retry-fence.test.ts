import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RETRY_WORKER_LOCK } from '../../../../src/modules/notifications/model.ts';
import { MINUTE, notificationsWorld, seedFailed, setChannel, stored } from '../support.ts';

// One row at a time, so the second send starts only after the first has been answered.
const w = await notificationsWorld({}, { notifications: { sendConcurrency: 1, retryBatchSize: 50 } });
const a = w.main;
const phone = () => `+7999${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;

test('a retry worker whose single-runner lease was taken over mid-run sends nothing more: its pre-send check fails on the fencing token', async () => {
  await setChannel(a, 'Sms', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
  const due = new Date(a.clock.now().getTime() - MINUTE);
  const first = await seedFailed(a.pool, { channel: 'Sms', address: phone(), dueAt: due });
  const second = await seedFailed(a.pool, { channel: 'Sms', address: phone(), dueAt: new Date(due.getTime() + 1000) });

  const gate = w.http.hold();
  const run = a.runRetry();
  const req = await gate.arrived;
  assert.equal(req.body.clientReference, first, 'the earliest due row goes first');
  // What a takeover leaves while this run is held up: the lease now has a newer token.
  const { rowCount } = await a.pool.query('update platform.job_leases set token = token + 1 where name = $1', [RETRY_WORKER_LOCK]);
  assert.equal(rowCount, 1, 'the run holds a lease on the seed\'s lock name');
  gate.release();
  const result = await run;

  assert.equal(w.http.requestsFor(second).length, 0, 'the row after the takeover was not sent');
  const untouched = await stored(a.pool, second);
  assert.equal(untouched.status, 'Failed');
  assert.equal(untouched.attempts, 1, 'no attempt was used on it');
  assert.equal(result.counts.failed, 1);
  // The send made before the takeover is recorded as what it was.
  assert.equal((await stored(a.pool, first)).status, 'Sent');
});

test('an e-mail retry after the takeover is refused at its send intent, the fenced write before an SMTP send', async () => {
  await setChannel(a, 'Email', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
  const due = new Date(a.clock.now().getTime() - MINUTE);
  const first = await seedFailed(a.pool, { channel: 'Email', address: `first-${Date.now()}@example.test`, dueAt: due });
  const second = await seedFailed(a.pool, { channel: 'Email', address: `second-${Date.now()}@example.test`, dueAt: new Date(due.getTime() + 1000) });

  const gate = w.smtp.hold();
  const run = a.runRetry();
  const mail = await gate.arrived;
  assert.equal(mail.notificationId, first);
  await a.pool.query('update platform.job_leases set token = token + 1 where name = $1', [RETRY_WORKER_LOCK]);
  gate.release();
  await run;

  assert.equal(w.smtp.messagesFor(second).length, 0, 'the e-mail after the takeover was not sent');
  const untouched = await stored(a.pool, second);
  assert.equal(untouched.attempts, 1);
  const { rows } = await a.pool.query('select send_intent_cycle from notifications.notifications where id = $1', [second]);
  assert.equal(rows[0]!.send_intent_cycle, null, 'no send intent was written under the old token');
});
