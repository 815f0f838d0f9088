import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { jwtVerify } from 'jose';
import { type TestClient } from '../../../support/signalr.ts';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';
import { waitFor } from '../../../support/wait.ts';

type Conference = { id: string; chatId: string; status: string; roomName: string; participants: { userId: string; status: string; screenSharing: boolean }[] };
type Join = { accessToken: string };
type Recording = { id: string; status: string; errorCode: string | null };
type Err = { code: string };
type Payload = Record<string, unknown> & { Join?: { AccessToken: string } };


/** A group chat of three (alice owns it), everyone connected, plus an outsider. */
async function setup(m: MessengerApp) {
  const [alice, bob, carol, eve] = [await m.user(), await m.user(), await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal', memberUserIds: [bob.id, carol.id] })).body;
  const clients = await Promise.all([alice, bob, carol, eve].map((u) => m.connect(u.token, ALL_EVENTS)));
  await m.dispatch();
  return { alice, bob, carol, eve, chat, clients: clients as [TestClient, TestClient, TestClient, TestClient] };
}

describe('conferences in a chat (SessionKind Conference)', () => {
  test('UC-MSG-006 start: every chat participant gets conference_started with a MediaJoinModel of its own; outsiders see nothing', async () => {
    const m = await messengerApp();
    const { alice, bob, carol, eve, chat, clients } = await setup(m);
    const started = await m.call<{ conference: Conference; join: Join }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Video' });
    assert.equal(started.status, 201);
    assert.deepEqual(started.body.conference.participants.map((p) => [p.userId, p.status]), [[alice.id, 'Joined']]);
    const again = await m.call<Err>(bob.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Audio' });
    assert.deepEqual([again.status, again.body.code], [409, 'MSG_CONFERENCE_ALREADY_ACTIVE']);
    assert.equal((await m.call<Err>(eve.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Audio' })).status, 404);
    assert.equal((await m.call<Err>(eve.token, 'GET', `/api/messenger/conferences/${started.body.conference.id}`)).status, 404);
    await m.dispatch();
    const key = new TextEncoder().encode(m.config.MESSENGER_MEDIA_TOKEN_SECRET);
    for (const [i, user] of [alice, bob, carol].entries()) {
      await waitFor(`conference_started to member ${i}`, () => ofEvent<Payload>(clients[i]!, 'conference_started').length === 1);
      const p = ofEvent<Payload>(clients[i]!, 'conference_started')[0]!;
      assert.deepEqual([p.ConferenceId, p.ChatId, p.SessionKind], [started.body.conference.id, chat.id, 'Conference']);
      const claims = (await jwtVerify(p.Join!.AccessToken, key, { currentDate: m.clock.now() })).payload;
      assert.deepEqual([claims.sub, claims.room], [user.id, started.body.conference.roomName]);
    }
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(clients[3].received.length, 0);
  });

  test('invite, join, screen share and leave: conference_invited to the invitee, roster changes to the chat', async () => {
    const m = await messengerApp();
    const { alice, bob, carol, eve, chat, clients } = await setup(m);
    const [ca, cb, cc] = clients;
    const conf = (await m.call<{ conference: Conference }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Video' })).body.conference;
    const base = `/api/messenger/conferences/${conf.id}`;
    assert.equal((await m.call<Err>(bob.token, 'POST', `${base}/invite`, { userIds: [carol.id] })).body.code, 'MSG_CONFERENCE_NOT_JOINED');
    const invited = await m.call<Conference>(alice.token, 'POST', `${base}/invite`, { userIds: [carol.id, eve.id] });
    assert.deepEqual(invited.body.participants.map((p) => [p.userId, p.status]).sort(), [[alice.id, 'Joined'], [carol.id, 'Invited']].sort(), 'non-members are not invited');
    const joined = await m.call<{ conference: Conference; join: Join }>(carol.token, 'POST', `${base}/join`);
    assert.ok(joined.body.join.accessToken);
    assert.equal((await m.call(carol.token, 'POST', `${base}/screen-share/start`)).status, 200);
    assert.equal((await m.call<Err>(alice.token, 'POST', `${base}/screen-share/start`)).body.code, 'MSG_SCREEN_SHARE_BUSY');
    await m.call(carol.token, 'POST', `${base}/leave`);
    await m.dispatch();
    await waitFor('the invitation', () => ofEvent<Payload>(cc, 'conference_invited').length === 1);
    assert.ok(ofEvent<Payload>(cc, 'conference_invited')[0]!.Join?.AccessToken);
    assert.equal(ofEvent<Payload>(cb, 'conference_invited').length, 0, 'only the invitee is rung');
    for (const c of [ca, cb, cc]) {
      await waitFor('roster events to every member', () => ['conference_participant_joined', 'screen_share_started', 'screen_share_stopped', 'conference_participant_left'].every((e) => ofEvent<Payload>(c, e).length === 1));
    }
    assert.equal(ofEvent<Payload>(cb, 'conference_participant_joined')[0]!.UserId, carol.id);
    assert.equal(ofEvent<Payload>(cb, 'screen_share_started')[0]!.UserId, carol.id);
    assert.equal(ofEvent<Payload>(cb, 'conference_participant_left')[0]!.UserId, carol.id);
  });

  test('recording: start (one at a time), stop, outcome Available or Failed — each pushed to the chat', async () => {
    const mediaServer = 'media-callback-secret-for-this-test-0123456789';
    const m = await messengerApp({ MESSENGER_MEDIA_CALLBACK_SECRET: mediaServer });
    const { alice, bob, chat, clients } = await setup(m);
    const cb = clients[1];
    const conf = (await m.call<{ conference: Conference }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Video' })).body.conference;
    const base = `/api/messenger/conferences/${conf.id}`;
    const first = (await m.call<Recording>(alice.token, 'POST', `${base}/recordings`)).body;
    assert.equal(first.status, 'Recording');
    assert.equal((await m.call<Err>(alice.token, 'POST', `${base}/recordings`)).body.code, 'MSG_RECORDING_ALREADY_ACTIVE');
    assert.equal((await m.call<Recording>(alice.token, 'POST', `${base}/recordings/${first.id}/stop`)).body.status, 'Stopped');
    const available = await m.call<Recording>(mediaServer, 'POST', `/api/messenger/admin/recordings/${first.id}/outcome`, { status: 'Available' });
    assert.equal(available.body.status, 'Available');
    assert.equal((await m.call<Err>(mediaServer, 'POST', `/api/messenger/admin/recordings/${first.id}/outcome`, { status: 'Failed' })).body.code, 'MSG_RECORDING_INVALID_STATE');
    assert.equal((await m.call<Err>(bob.token, 'POST', `/api/messenger/admin/recordings/${first.id}/outcome`, { status: 'Failed' })).status, 401);
    const second = (await m.call<Recording>(alice.token, 'POST', `${base}/recordings`)).body;
    const failed = await m.call<Recording>(mediaServer, 'POST', `/api/messenger/admin/recordings/${second.id}/outcome`, { status: 'Failed', errorCode: 'STORAGE_FULL' });
    assert.deepEqual([failed.body.status, failed.body.errorCode], ['Failed', 'STORAGE_FULL']);
    await m.dispatch();
    await waitFor('recording events', () => ['recording_started', 'recording_stopped', 'recording_available', 'recording_failed'].every((e) => ofEvent<Payload>(cb, e).length >= 1));
    assert.equal(ofEvent<Payload>(cb, 'recording_failed')[0]!.ErrorCode, 'STORAGE_FULL');
    assert.equal(ofEvent<Payload>(cb, 'recording_available')[0]!.RecordingId, first.id);
  });

  test('end: the starter or the chat owner; a running recording stops with it; a new conference may start afterwards', async () => {
    const m = await messengerApp();
    const { alice, bob, carol, chat, clients } = await setup(m);
    const cc = clients[2];
    const conf = (await m.call<{ conference: Conference }>(bob.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Audio' })).body.conference;
    const base = `/api/messenger/conferences/${conf.id}`;
    await m.call(bob.token, 'POST', `${base}/recordings`);
    assert.equal((await m.call<Conference>(alice.token, 'GET', base)).body.status, 'Active');
    assert.equal((await m.call<Err>(carol.token, 'POST', `${base}/end`)).body.code, 'MSG_CALL_FORBIDDEN', 'a member who did not start it');
    assert.equal((await m.call<Conference>(alice.token, 'POST', `${base}/end`)).body.status, 'Ended', 'the chat owner may end it');
    assert.equal((await m.call<Err>(bob.token, 'POST', `${base}/join`)).body.code, 'MSG_CALL_INVALID_STATE');
    assert.equal((await m.call(bob.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Audio' })).status, 201);
    await m.dispatch();
    await waitFor('end and recording stop', () => ofEvent<Payload>(cc, 'conference_ended').length === 1 && ofEvent<Payload>(cc, 'recording_stopped').length === 1);
  });
});
