import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../../support/wait.ts';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';
import { direct, fence, streamEvents, type User } from './consent-support.ts';

/**
 * A conference's start rings as a 1:1 call does (docs/security.md, "Consent"; calls/ring-consent.ts):
 * in a Direct chat, `conference_started` reaches the other member only when they consented to the
 * starter — never a member who blocked the starter (the blocked are never told: the starter's answer
 * and frame are as any), nor one whose message request is unanswered. A starter who blocks the other
 * member is refused (403 MSG_USER_BLOCKED). Groups are left as the docs leave group frames: to the
 * whole group.
 */

type Started = { conference: { id: string }; join: { accessToken: string } };
const start = (m: MessengerApp, u: User, chatId: string) => m.call<Started & { code?: string }>(u.token, 'POST', `/api/messenger/chats/${chatId}/conferences`, { media: 'Video' });
/** The conference_started events of `u`'s event stream, by ConferenceId. */
const startedIn = async (m: MessengerApp, u: User) =>
  (await streamEvents(m, u))
    .filter((e) => e.name === 'conference_started').map((e) => e.payload.ConferenceId);

describe('conference_started in a Direct chat rings only one who consented to the starter', () => {
  test('both accepted: the other member is rung with a join model of their own', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId, ca, cb } = await direct(m);
    const started = await start(m, alice, chatId);
    assert.equal(started.status, 201);
    await m.dispatch();
    for (const c of [ca, cb]) await waitFor('conference_started', () => ofEvent(c, 'conference_started').length === 1);
    assert.ok((ofEvent(cb, 'conference_started')[0]!.Join as { AccessToken?: string }).AccessToken);
    assert.deepEqual(await startedIn(m, bob), [started.body.conference.id]);
  });

  test('a member who blocked the starter gets no conference_started (frame or stream); the starter sees what any start gives', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId, ca, cb } = await direct(m);
    assert.equal((await m.call(bob.token, 'PUT', `/api/messenger/blacklist/${alice.id}`)).status, 200);
    const started = await start(m, alice, chatId);
    assert.equal(started.status, 201, 'the blocked are never told');
    assert.ok(started.body.join.accessToken);
    await m.dispatch();
    await waitFor('the starter’s own conference_started', () => ofEvent(ca, 'conference_started').length === 1);
    await fence(m, bob, cb);
    assert.deepEqual(ofEvent(cb, 'conference_started'), [], 'the blocker is not rung');
    assert.deepEqual(await startedIn(m, bob), []);
    assert.deepEqual(await startedIn(m, alice), [started.body.conference.id]);
  });

  test('an unanswered message request is no consent: the other member is not rung', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId, ca, cb } = await direct(m, false);
    const started = await start(m, alice, chatId);
    assert.equal(started.status, 201);
    await m.dispatch();
    await waitFor('the starter’s own conference_started', () => ofEvent(ca, 'conference_started').length === 1);
    await fence(m, bob, cb);
    assert.deepEqual(ofEvent(cb, 'conference_started'), []);
    assert.deepEqual(await startedIn(m, bob), []);
  });

  test('a starter who blocks the other member is refused 403 MSG_USER_BLOCKED, nothing stored', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId } = await direct(m);
    assert.equal((await m.call(alice.token, 'PUT', `/api/messenger/blacklist/${bob.id}`)).status, 200);
    const refused = await start(m, alice, chatId);
    assert.deepEqual([refused.status, refused.body.code], [403, 'MSG_USER_BLOCKED']);
    const { rows } = await m.pool.query(`select 1 from messenger.media_sessions where chat_id = $1`, [chatId]);
    assert.equal(rows.length, 0);
  });
});

describe('conference_started in a group', () => {
  test('goes to the whole group, a member who blocked the starter too (group frames go to the whole group)', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const chatId = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal', memberUserIds: [bob.id, carol.id] })).body.id;
    assert.equal((await m.call(bob.token, 'PUT', `/api/messenger/blacklist/${alice.id}`)).status, 200);
    const cb = await m.connect(bob.token, ALL_EVENTS);
    const started = await start(m, alice, chatId);
    assert.equal(started.status, 201);
    await m.dispatch();
    await waitFor('conference_started to the blocker in the group', () => ofEvent(cb, 'conference_started').length === 1);
  });
});
