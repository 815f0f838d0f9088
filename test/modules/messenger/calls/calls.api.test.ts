import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { jwtVerify } from 'jose';
import { CALL_TIMEOUT_REAPER_JOB } from '../../../../src/modules/messenger/calls/call-timeout-reaper.job.ts';
import { type TestClient } from '../../../support/signalr.ts';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';
import { waitFor } from '../../../support/wait.ts';

type Join = { roomName: string; accessToken: string; iceServers: { username: string; credential: string }[] };
type Call = { id: string; status: string; roomName: string; callerUserId: string; calleeUserId: string };
type Err = { code: string };
type Payload = Record<string, unknown> & { Join?: { AccessToken: string; IceServers: { Credential: string }[] } };

const mediaKey = (m: MessengerApp) => new TextEncoder().encode(m.config.MESSENGER_MEDIA_TOKEN_SECRET);

/** Every token and TURN credential a client saw must be absent from every realtime_outbox row. */
async function assertNoSecretsStored(m: MessengerApp, secrets: string[]): Promise<void> {
  const { rows } = await m.pool.query<{ row: string }>(`select row_to_json(o)::text as row from push.realtime_outbox o`);
  assert.ok(rows.length > 0);
  for (const { row } of rows) {
    for (const s of secrets) assert.ok(!row.includes(s), 'a secret was stored in realtime_outbox');
    assert.doesNotMatch(row, /eyJ[\w-]+\./, 'no JWT-looking value stored');
  }
}

describe('1:1 calls (SessionKind Direct) and the CallTimeoutReaper', () => {
  test('UC-MSG-005: invite rings the callee only, with its own MediaJoinModel; answer and end reach both parties; nothing secret is stored', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    await m.contacts(alice, bob);
    const [ca, cb, cc] = await Promise.all([alice, bob, carol].map((u) => m.connect(u.token, ALL_EVENTS)));
    const invited = await m.call<{ call: Call; join: Join }>(alice.token, 'POST', '/api/messenger/calls', { calleeUserId: bob.id, media: 'Video' });
    assert.equal(invited.status, 201);
    assert.equal(invited.body.call.status, 'Ringing');
    const callerClaims = (await jwtVerify(invited.body.join.accessToken, mediaKey(m), { currentDate: m.clock.now() })).payload;
    assert.deepEqual([callerClaims.sub, callerClaims.room], [alice.id, invited.body.call.roomName]);
    await m.dispatch();
    await waitFor('the ring', () => ofEvent<Payload>(cb!, 'call_invited').length === 1);
    const ring = ofEvent<Payload>(cb!, 'call_invited')[0]!;
    assert.deepEqual([ring.CallId, ring.CallerUserId, ring.SessionKind, ring.Status], [invited.body.call.id, alice.id, 'Direct', 'Ringing']);
    const calleeClaims = (await jwtVerify(ring.Join!.AccessToken, mediaKey(m), { currentDate: m.clock.now() })).payload;
    assert.equal(calleeClaims.sub, bob.id, 'the callee gets a token of its own');
    assert.equal(ofEvent<Payload>(ca!, 'call_invited').length + ofEvent<Payload>(cc!, 'call_invited').length, 0);

    const answered = await m.call<{ call: Call; join: Join }>(bob.token, 'POST', `/api/messenger/calls/${invited.body.call.id}/answer`);
    assert.equal(answered.body.call.status, 'Active');
    assert.ok(answered.body.join.accessToken);
    const ended = await m.call<{ call: Call }>(alice.token, 'POST', `/api/messenger/calls/${invited.body.call.id}/end`);
    assert.equal(ended.body.call.status, 'Ended');
    await m.dispatch();
    for (const c of [ca!, cb!]) await waitFor('answer and end', () => ofEvent<Payload>(c, 'call_answered').length === 1 && ofEvent<Payload>(c, 'call_ended').length === 1);
    assert.equal(ofEvent<Payload>(cb!, 'call_ended')[0]!.EndedByUserId, alice.id);
    assert.equal(cc!.received.length, 0, 'a third user sees nothing');
    await assertNoSecretsStored(m, [
      invited.body.join.accessToken,
      answered.body.join.accessToken,
      ring.Join!.AccessToken,
      ring.Join!.IceServers[0]!.Credential,
      invited.body.join.iceServers[0]!.credential,
    ]);
  });

  test('decline is the callee’s, cancel the caller’s; a call in the wrong state refuses with MSG_CALL_INVALID_STATE; strangers get 404', async () => {
    const m = await messengerApp();
    const [alice, bob, eve] = [await m.user(), await m.user(), await m.user()];
    await m.contacts(alice, bob);
    const ring = async () => (await m.call<{ call: Call }>(alice.token, 'POST', '/api/messenger/calls', { calleeUserId: bob.id, media: 'Audio' })).body.call.id;
    const first = await ring();
    assert.equal((await m.call<Err>(alice.token, 'POST', `/api/messenger/calls/${first}/decline`)).body.code, 'MSG_CALL_FORBIDDEN');
    assert.equal((await m.call<Err>(eve.token, 'POST', `/api/messenger/calls/${first}/decline`)).status, 404);
    assert.equal((await m.call<Err>(eve.token, 'GET', `/api/messenger/calls/${first}`)).status, 404);
    assert.equal((await m.call<{ call: Call }>(bob.token, 'POST', `/api/messenger/calls/${first}/decline`)).body.call.status, 'Declined');
    assert.equal((await m.call<Err>(bob.token, 'POST', `/api/messenger/calls/${first}/answer`)).body.code, 'MSG_CALL_INVALID_STATE');
    const second = await ring();
    assert.equal((await m.call<Err>(bob.token, 'POST', `/api/messenger/calls/${second}/cancel`)).body.code, 'MSG_CALL_FORBIDDEN');
    assert.equal((await m.call<{ call: Call }>(alice.token, 'POST', `/api/messenger/calls/${second}/cancel`)).body.call.status, 'Cancelled');
    assert.equal((await m.call<Err>(alice.token, 'POST', `/api/messenger/calls/${second}/end`)).body.code, 'MSG_CALL_INVALID_STATE');
    assert.equal((await m.call<Err>(alice.token, 'POST', '/api/messenger/calls', { calleeUserId: alice.id, media: 'Audio' })).body.code, 'MSG_CALL_SELF');
  });

  test('CallTimeoutReaper: an invite unanswered past the ring timeout becomes Missed with call_missed to both; answered calls are left alone', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    await m.contacts(alice, bob);
    const [ca, cb] = await Promise.all([alice, bob].map((u) => m.connect(u.token, ALL_EVENTS)));
    const unanswered = (await m.call<{ call: Call }>(alice.token, 'POST', '/api/messenger/calls', { calleeUserId: bob.id, media: 'Audio' })).body.call.id;
    const answered = (await m.call<{ call: Call }>(alice.token, 'POST', '/api/messenger/calls', { calleeUserId: bob.id, media: 'Audio' })).body.call.id;
    await m.call(bob.token, 'POST', `/api/messenger/calls/${answered}/answer`);
    const reap = () => m.app.platform.runner.runNow(CALL_TIMEOUT_REAPER_JOB);
    m.clock.advance(44_999);
    assert.equal((await reap()).counts.missed, 0, 'still ringing before the timeout');
    m.clock.advance(1);
    assert.equal((await reap()).counts.missed, 1);
    assert.equal((await m.call<Call>(alice.token, 'GET', `/api/messenger/calls/${unanswered}`)).body.status, 'Missed');
    assert.equal((await m.call<Call>(alice.token, 'GET', `/api/messenger/calls/${answered}`)).body.status, 'Active');
    assert.equal((await m.call<Err>(bob.token, 'POST', `/api/messenger/calls/${unanswered}/answer`)).body.code, 'MSG_CALL_INVALID_STATE');
    await m.dispatch();
    for (const c of [ca!, cb!]) await waitFor('call_missed', () => ofEvent<Payload>(c, 'call_missed').length === 1);
    assert.equal(ofEvent<Payload>(cb!, 'call_missed')[0]!.CallId, unanswered);
  });

  test('a blocked user cannot ring you, and is not told (their call is Missed at once, as any unconsented call); you calling them is 403 MSG_USER_BLOCKED', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    await m.contacts(alice, bob);
    await m.call(alice.token, 'PUT', `/api/messenger/blacklist/${bob.id}`);
    const call = (from: string, to: string) => m.call<Err & { call: Call; join?: Join }>(from, 'POST', '/api/messenger/calls', { calleeUserId: to, media: 'Audio' });
    const blocked = await call(bob.token, alice.id);
    assert.deepEqual([blocked.status, blocked.body.call.status, blocked.body.join], [201, 'Missed', undefined]);
    assert.equal((await call(alice.token, bob.id)).body.code, 'MSG_USER_BLOCKED');
    await m.dispatch();
    const replay = await m.call<{ events: { name: string }[] }>(alice.token, 'GET', '/api/events?after=e0');
    assert.deepEqual(replay.body.events.filter((e) => e.name.startsWith('call_')), [], 'nothing of the call is pushed to alice');
  });
});
