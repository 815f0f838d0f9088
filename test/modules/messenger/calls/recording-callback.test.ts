import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp, type MessengerApp } from '../support/app.ts';

type Recording = { id: string; status: string };
type Err = { code: string; message: string };

const SECRET = 'the-media-servers-own-callback-secret-0123456789';
const outcomeUrl = (id: string) => `/api/messenger/admin/recordings/${id}/outcome`;

/** A running recording of a 1:1 chat's conference. */
async function runningRecording(m: MessengerApp) {
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Rec', memberUserIds: [bob.id] })).body;
  const conf = (await m.call<{ conference: { id: string } }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Video' })).body.conference;
  const recording = (await m.call<Recording>(alice.token, 'POST', `/api/messenger/conferences/${conf.id}/recordings`)).body;
  assert.equal(recording.status, 'Recording');
  return recording;
}

/** What a refused callback must leave untouched: the recording row and the realtime outbox. */
async function stored(m: MessengerApp, recordingId: string) {
  const row = (await m.pool.query('select status, error_code, completed_at, updated_at from messenger.call_recordings where id = $1', [recordingId])).rows[0];
  const outbox = (await m.pool.query<{ n: number }>('select count(*)::int as n from push.realtime_outbox')).rows[0]!.n;
  return { row, outbox };
}

describe('the media server recording-outcome callback has its own credential', () => {
  test('the admin token, a wrong secret and no credential are refused with 401 { code, message } and change nothing; the right secret is accepted', async () => {
    const m = await messengerApp({ MESSENGER_MEDIA_CALLBACK_SECRET: SECRET });
    const recording = await runningRecording(m);
    const before = await stored(m, recording.id);
    const admin = await m.token({ admin: true });

    for (const [what, credential, code] of [
      ['an admin token', admin, 'AUTH_INVALID_CREDENTIAL'],
      ['a wrong secret', `${SECRET.slice(0, -1)}X`, 'AUTH_INVALID_CREDENTIAL'],
      ['a prefix of the secret', SECRET.slice(0, 20), 'AUTH_INVALID_CREDENTIAL'],
    ] as const) {
      const res = await m.call<Err>(credential, 'POST', outcomeUrl(recording.id), { status: 'Failed', errorCode: 'FORGED' });
      assert.equal(res.status, 401, what);
      assert.equal(res.body.code, code, what);
      assert.equal(typeof res.body.message, 'string', what);
    }
    const anonymous = await m.app.inject({ method: 'POST', url: outcomeUrl(recording.id), payload: { status: 'Failed' } });
    assert.deepEqual([anonymous.statusCode, anonymous.json().code], [401, 'AUTH_REQUIRED']);
    assert.deepEqual(await stored(m, recording.id), before, 'nothing stored changed through a refused callback');

    const accepted = await m.call<Recording>(SECRET, 'POST', outcomeUrl(recording.id), { status: 'Available' });
    assert.deepEqual([accepted.status, accepted.body.status], [200, 'Available']);
    const after = await stored(m, recording.id);
    assert.equal(after.row.status, 'Available');
    assert.equal(after.outbox, before.outbox + 1, 'recording_available is queued for the chat');
  });

  test('with MESSENGER_MEDIA_CALLBACK_SECRET unset the callback refuses everyone, admins included', async () => {
    const m = await messengerApp();
    const recording = await runningRecording(m);
    const before = await stored(m, recording.id);
    const res = await m.call<Err>(await m.token({ admin: true }), 'POST', outcomeUrl(recording.id), { status: 'Available' });
    assert.deepEqual([res.status, res.body.code], [401, 'AUTH_MEDIA_CALLBACK_DISABLED']);
    assert.deepEqual(await stored(m, recording.id), before);
  });
});
