import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { ALL_EVENTS, messengerApp, type MessengerApp } from '../support/app.ts';
import { direct, fence, streamEvents, type User } from './consent-support.ts';

/**
 * Every frame of a Direct chat's conference follows the ring consent of its start
 * (calls/conference-audience.ts; docs/security.md, "Consent", Rings): a member who blocked the
 * starter, or the other side of an unanswered message request, gets none of its frames — started,
 * roster, screen share, recording, ended — neither live nor in the event stream; the starter and a
 * rung member get all of them, in order. Judged per frame: a block added mid-call stops the next
 * frame, a block lifted lets the following ones through.
 */

type Conf = { conference: { id: string } };
const MEDIA = 'media-callback-secret-for-this-test-0123456789';

/** The event names of one conference's frames `c` received, in order. */
const framesOf = (c: TestClient, conferenceId: string) =>
  c.received.filter((r) => (r.payload as { ConferenceId?: string }).ConferenceId === conferenceId).map((r) => r.event);

/** The same from `u`'s event stream. */
const streamOf = async (m: MessengerApp, u: User, conferenceId: string) =>
  (await streamEvents(m, u)).filter((e) => e.payload.ConferenceId === conferenceId).map((e) => e.name);

const ok = async (m: MessengerApp, token: string, method: string, path: string, body?: unknown) => {
  const res = await m.call<{ id: string }>(token, method, path, body);
  assert.ok(res.status === 200 || res.status === 201, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};

/** Alice's whole conference: every kind of later frame (bob joins first when `bobJoins`); the frames it pushes, in order. */
async function wholeConference(m: MessengerApp, alice: User, bob: User, chatId: string, bobJoins: boolean): Promise<{ id: string; expected: string[] }> {
  const id = (await m.call<Conf>(alice.token, 'POST', `/api/messenger/chats/${chatId}/conferences`, { media: 'Video' })).body.conference.id;
  const base = `/api/messenger/conferences/${id}`;
  if (bobJoins) await ok(m, bob.token, 'POST', `${base}/join`);
  await ok(m, alice.token, 'POST', `${base}/screen-share/start`);
  await ok(m, alice.token, 'POST', `${base}/screen-share/stop`);
  const rec = await ok(m, alice.token, 'POST', `${base}/recordings`);
  await ok(m, alice.token, 'POST', `${base}/recordings/${rec.id}/stop`);
  await ok(m, MEDIA, 'POST', `/api/messenger/admin/recordings/${rec.id}/outcome`, { status: 'Available' });
  await ok(m, alice.token, 'POST', `${base}/leave`);
  await ok(m, alice.token, 'POST', `${base}/join`);
  await ok(m, alice.token, 'POST', `${base}/recordings`);
  await ok(m, alice.token, 'POST', `${base}/end`);
  await m.dispatch();
  const expected = [
    'conference_started',
    ...(bobJoins ? ['conference_participant_joined'] : []),
    'screen_share_started',
    'screen_share_stopped',
    'recording_started',
    'recording_stopped',
    'recording_available',
    'conference_participant_left',
    'conference_participant_joined',
    'recording_started',
    'recording_stopped',
    'conference_ended',
  ];
  return { id, expected };
}

describe('the later frames of a Direct chat’s conference follow the ring consent of its start', () => {
  test('a member who blocked the starter gets none of the conference’s frames; the starter gets all, in order', async () => {
    const m = await messengerApp({ MESSENGER_MEDIA_CALLBACK_SECRET: MEDIA });
    const { alice, bob, chatId, ca, cb } = await direct(m);
    assert.equal((await m.call(bob.token, 'PUT', `/api/messenger/blacklist/${alice.id}`)).status, 200);
    const { id, expected } = await wholeConference(m, alice, bob, chatId, false);
    await waitFor('every frame on the starter’s devices', () => framesOf(ca, id).length === expected.length);
    assert.deepEqual(framesOf(ca, id), expected);
    assert.deepEqual(await streamOf(m, alice, id), expected);
    await fence(m, bob, cb);
    assert.deepEqual(framesOf(cb, id), [], 'the blocker learns nothing of the call');
    assert.deepEqual(await streamOf(m, bob, id), []);
  });

  test('an unanswered message request: the other member gets none of the conference’s frames', async () => {
    const m = await messengerApp({ MESSENGER_MEDIA_CALLBACK_SECRET: MEDIA });
    const { alice, bob, chatId, ca, cb } = await direct(m, false);
    const { id, expected } = await wholeConference(m, alice, bob, chatId, false);
    await waitFor('every frame on the starter’s devices', () => framesOf(ca, id).length === expected.length);
    assert.deepEqual(framesOf(ca, id), expected);
    await fence(m, bob, cb);
    assert.deepEqual(framesOf(cb, id), []);
    assert.deepEqual(await streamOf(m, bob, id), []);
  });

  test('a rung member (both accepted) gets every frame, in order, as the starter does', async () => {
    const m = await messengerApp({ MESSENGER_MEDIA_CALLBACK_SECRET: MEDIA });
    const { alice, bob, chatId, ca, cb } = await direct(m);
    const { id, expected } = await wholeConference(m, alice, bob, chatId, true);
    for (const [c, who] of [[ca, 'starter'], [cb, 'rung member']] as const) {
      await waitFor(`every frame on the ${who}’s devices`, () => framesOf(c, id).length === expected.length);
      assert.deepEqual(framesOf(c, id), expected, who);
    }
    assert.deepEqual(await streamOf(m, bob, id), expected);
  });

  test('an unanswered request, then an explicit invite: the invited member is rung and gets the frames from then on; a blocker invited gets none', async () => {
    const m = await messengerApp({ MESSENGER_MEDIA_CALLBACK_SECRET: MEDIA });
    const { alice, bob, chatId, cb } = await direct(m, false);
    const id = (await m.call<Conf>(alice.token, 'POST', `/api/messenger/chats/${chatId}/conferences`, { media: 'Video' })).body.conference.id;
    const base = `/api/messenger/conferences/${id}`;
    await ok(m, alice.token, 'POST', `${base}/invite`, { userIds: [bob.id] });
    await ok(m, alice.token, 'POST', `${base}/screen-share/start`);
    await m.dispatch();
    await waitFor('the frame after the invite', () => framesOf(cb, id).includes('screen_share_started'));
    assert.deepEqual(framesOf(cb, id), ['conference_invited', 'screen_share_started'], 'not rung by the start, rung by the invite');

    const other = await direct(m);
    assert.equal((await m.call(other.bob.token, 'PUT', `/api/messenger/blacklist/${other.alice.id}`)).status, 200);
    const blocked = (await m.call<Conf>(other.alice.token, 'POST', `/api/messenger/chats/${other.chatId}/conferences`, { media: 'Video' })).body.conference.id;
    await ok(m, other.alice.token, 'POST', `/api/messenger/conferences/${blocked}/invite`, { userIds: [other.bob.id] });
    await ok(m, other.alice.token, 'POST', `/api/messenger/conferences/${blocked}/screen-share/start`);
    await fence(m, other.bob, other.cb);
    assert.deepEqual(framesOf(other.cb, blocked), [], 'shown Invited to the starter, yet told nothing');
  });

  test('judged per frame: a block added mid-call stops the next frame to the blocker, a block lifted lets the next through', async () => {
    const m = await messengerApp({ MESSENGER_MEDIA_CALLBACK_SECRET: MEDIA });
    const { alice, bob, chatId, ca, cb } = await direct(m);
    const id = (await m.call<Conf>(alice.token, 'POST', `/api/messenger/chats/${chatId}/conferences`, { media: 'Video' })).body.conference.id;
    const base = `/api/messenger/conferences/${id}`;
    assert.equal((await m.call(bob.token, 'PUT', `/api/messenger/blacklist/${alice.id}`)).status, 200);
    await ok(m, alice.token, 'POST', `${base}/screen-share/start`);
    assert.equal((await m.call(bob.token, 'DELETE', `/api/messenger/blacklist/${alice.id}`)).status, 200);
    await ok(m, alice.token, 'POST', `${base}/screen-share/stop`);
    await m.dispatch();
    const all = ['conference_started', 'screen_share_started', 'screen_share_stopped'];
    await waitFor('every frame on the starter’s devices', () => framesOf(ca, id).length === all.length);
    assert.deepEqual(framesOf(ca, id), all);
    await waitFor('the frame after the unblock', () => framesOf(cb, id).includes('screen_share_stopped'));
    assert.deepEqual(framesOf(cb, id), ['conference_started', 'screen_share_stopped'], 'nothing while the block stood');
  });
});

describe('a group’s conference frames', () => {
  test('still go to the whole group, a member who blocked the starter too', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const chatId = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal', memberUserIds: [bob.id, carol.id] })).body.id;
    assert.equal((await m.call(bob.token, 'PUT', `/api/messenger/blacklist/${alice.id}`)).status, 200);
    const cb = await m.connect(bob.token, ALL_EVENTS);
    const id = (await m.call<Conf>(alice.token, 'POST', `/api/messenger/chats/${chatId}/conferences`, { media: 'Video' })).body.conference.id;
    await ok(m, alice.token, 'POST', `/api/messenger/conferences/${id}/screen-share/start`);
    await ok(m, alice.token, 'POST', `/api/messenger/conferences/${id}/end`);
    await m.dispatch();
    const all = ['conference_started', 'screen_share_started', 'conference_ended'];
    await waitFor('every frame to the blocker in the group', () => framesOf(cb, id).length === all.length);
    assert.deepEqual(framesOf(cb, id), all);
  });
});
