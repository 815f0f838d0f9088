import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { applyUserStatus } from '../support/user-sync.ts';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * Deactivation ends what is under way (seed 002: Blocked or Archived → IsActive false): the
 * replica consumer's transaction takes the user out of their calls, conferences and screen share
 * with the frames the normal end and leave paths write, so the other parties learn it at once.
 */

type Call = { id: string; status: string; endedByUserId: string | null };
type Conference = { id: string; status: string; participants: { userId: string; status: string; screenSharing: boolean }[] };
type Err = { code: string };
type Payload = Record<string, unknown>;



const startCall = async (m: MessengerApp, from: string, to: string) =>
  (await m.call<{ call: Call }>(from, 'POST', '/api/messenger/calls', { calleeUserId: to, media: 'Audio' })).body.call.id;

describe('a user blocked or archived is taken out of what is under way', () => {
  test('a call in progress ends at once: both parties get call_ended with EndedByUserId the blocked party', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const ca = await m.connect(alice.token, ALL_EVENTS);
    await m.contacts(alice, bob);
    const callId = await startCall(m, alice.token, bob.id);
    assert.equal((await m.call<{ call: Call }>(bob.token, 'POST', `/api/messenger/calls/${callId}/answer`)).body.call.status, 'Active');

    await applyUserStatus(m, bob, 'Blocked', 2);
    const call = (await m.call<Call>(alice.token, 'GET', `/api/messenger/calls/${callId}`)).body;
    assert.deepEqual([call.status, call.endedByUserId], ['Ended', bob.id]);
    const { rows } = await m.pool.query<{ kind: string; target: string }>(
      `select kind, target_user_id as target from push.realtime_outbox where ref_id = $1 and kind = 'CallEnded' order by target_user_id`,
      [callId],
    );
    assert.deepEqual(rows.map((r) => r.target), [alice.id, bob.id].sort(), 'call_ended for both parties, as the end path writes');
    await m.dispatch();
    await waitFor('call_ended to the other party', () => ofEvent(ca, 'call_ended').length === 1);
    assert.deepEqual([ofEvent(ca, 'call_ended')[0]!.CallId, ofEvent(ca, 'call_ended')[0]!.EndedByUserId], [callId, bob.id]);
  });

  test('ringing calls: one from the archived user is cancelled and can no longer be answered; one to them is missed (batch path)', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const [cb, cc] = [await m.connect(bob.token, ALL_EVENTS), await m.connect(carol.token, ALL_EVENTS)];
    await m.contacts(alice, bob);
    await m.contacts(carol, alice);
    const fromAlice = await startCall(m, alice.token, bob.id);
    const toAlice = await startCall(m, carol.token, alice.id);

    await applyUserStatus(m, alice, 'Archived', 2, true);
    const answer = await m.call<Err>(bob.token, 'POST', `/api/messenger/calls/${fromAlice}/answer`);
    assert.deepEqual([answer.status, answer.body.code], [409, 'MSG_CALL_INVALID_STATE'], 'the ringing call of an archived caller cannot be answered');
    const cancelled = (await m.call<Call>(bob.token, 'GET', `/api/messenger/calls/${fromAlice}`)).body;
    assert.deepEqual([cancelled.status, cancelled.endedByUserId], ['Cancelled', alice.id]);
    const missed = (await m.call<Call>(carol.token, 'GET', `/api/messenger/calls/${toAlice}`)).body;
    assert.deepEqual([missed.status, missed.endedByUserId], ['Missed', null]);

    await m.dispatch();
    await waitFor('call_cancelled to the callee', () => ofEvent(cb, 'call_cancelled').length === 1);
    await waitFor('call_missed to the caller', () => ofEvent(cc, 'call_missed').length === 1);
    assert.equal(ofEvent(cb, 'call_cancelled')[0]!.CallId, fromAlice);
    assert.equal(ofEvent(cc, 'call_missed')[0]!.CallId, toAlice);
  });

  test('a conference: the blocked participant leaves it at once, their screen share stops first; the others go on', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal', memberUserIds: [bob.id, carol.id] })).body;
    const [ca, cc] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(carol.token, ALL_EVENTS)];
    const conf = (await m.call<{ conference: Conference }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Video' })).body.conference;
    const base = `/api/messenger/conferences/${conf.id}`;
    assert.equal((await m.call(bob.token, 'POST', `${base}/join`)).status, 200);
    assert.equal((await m.call(bob.token, 'POST', `${base}/screen-share/start`)).status, 200);
    await m.dispatch();

    await applyUserStatus(m, bob, 'Blocked', 2);
    const after = (await m.call<Conference>(alice.token, 'GET', base)).body;
    assert.equal(after.status, 'Active', 'the conference goes on for the others');
    assert.deepEqual(after.participants.find((p) => p.userId === bob.id), { userId: bob.id, status: 'Left', screenSharing: false });
    const rejoin = await m.call<Err>(bob.token, 'POST', `${base}/join`);
    assert.deepEqual([rejoin.status, rejoin.body.code], [403, 'MSG_USER_INACTIVE'], 'no join, no join token for the blocked user');
    assert.equal((await m.call(carol.token, 'POST', `${base}/join`)).status, 200);
    assert.equal((await m.call(carol.token, 'POST', `${base}/screen-share/start`)).status, 200, 'the screen is free for someone else');

    await m.dispatch();
    for (const c of [ca, cc]) {
      await waitFor('bob leaving', () => ofEvent(c, 'conference_participant_left').length === 1);
      const names = c.received.map((r) => r.event);
      const stopped = names.findIndex((e, i) => e === 'screen_share_stopped' && (c.received[i]!.payload as Payload).UserId === bob.id);
      assert.ok(stopped >= 0 && stopped < names.indexOf('conference_participant_left'), 'screen_share_stopped before conference_participant_left');
      assert.deepEqual(
        [ofEvent(c, 'conference_participant_left')[0]!.UserId, ofEvent(c, 'conference_participant_left')[0]!.ParticipantStatus],
        [bob.id, 'Left'],
      );
    }
  });

  test('a blocked member of the chat is not rung to its conference (no Invited roster entry, no invite row)', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal', memberUserIds: [bob.id, carol.id] })).body;
    const conf = (await m.call<{ conference: Conference }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Audio' })).body.conference;
    await applyUserStatus(m, bob, 'Blocked', 2);
    const invited = await m.call<Conference>(alice.token, 'POST', `/api/messenger/conferences/${conf.id}/invite`, { userIds: [bob.id, carol.id] });
    assert.equal(invited.status, 200);
    assert.deepEqual(invited.body.participants.map((p) => [p.userId, p.status]).sort(), [[alice.id, 'Joined'], [carol.id, 'Invited']].sort());
    const { rows } = await m.pool.query(`select 1 from push.realtime_outbox where kind = 'ConferenceInvited' and target_user_id = $1`, [bob.id]);
    assert.equal(rows.length, 0);
  });
});
