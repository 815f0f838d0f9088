import { test } from 'node:test';
import assert from 'node:assert/strict';
import { notificationsWorld, notify, setChannel, stored } from '../support.ts';
import { waitFor } from '../../../support/wait.ts';

// Background jobs on, with a dispatcher timer far longer than the test: only the NOTIFY sent when
// the creating transaction commits can start the send.
const w = await notificationsWorld({ JOBS_ENABLED: 'true' }, { notifications: { dispatchPollingIntervalMs: 600_000 } });
const a = w.main;
await a.app.platform.startBackground();

test('the dispatcher sends a Pending notification promptly after its commit, woken by NOTIFY', async () => {
  await setChannel(a, 'Sms', { maxAttempts: 3 });
  const { byChannel } = await notify(a, { channels: ['Sms'], phone: '+79995550101' });
  const sms = byChannel.get('Sms')!.id;
  const inApp = byChannel.get('InApp')!.id;
  await waitFor('both sent', async () => (await stored(a.pool, sms)).status === 'Sent' && (await stored(a.pool, inApp)).status === 'Sent');
  assert.equal(w.http.requestsFor(sms).length, 1);
});
