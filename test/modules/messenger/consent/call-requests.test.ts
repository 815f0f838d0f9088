import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * A ring interrupts, so only those the callee consented to may ring them (calls/ring-consent.ts,
 * docs/security.md "Consent"): an Accepted contact, or the other member of a Direct chat the callee
 * accepted. Anyone else's call is a missed-call request — Missed at once, `call_missed` to both, no
 * `call_invited`, no join model — as a stranger's message is a message request.
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
type Started = { call: { id: string; status: string; ringExpiresAt: string | null }; join?: { accessToken: string } };
const ring = (m: MessengerApp, from: User, to: User) => m.call<Started>(from.token, 'POST', '/api/messenger/calls', { calleeUserId: to.id, media: 'Audio' });
/** The call events pushed to `u`, from the event stream's start. */
async function callEvents(m: MessengerApp, u: User) {
  const res = await m.call<{ events: { name: string; payload: { CallId?: string } }[] }>(u.token, 'GET', '/api/events?after=e0');
  return res.body.events.filter((e) => e.name.startsWith('call_')).map((e) => [e.name, e.payload.CallId]);
}

describe('a call to someone who has not consented is a missed-call request', () => {
  test("a stranger's call does not ring: Missed at once without a join model, call_missed to both, no call_invited", async () => {
    const m = await messengerApp();
    const [stranger, target] = [await m.user(), await m.user()];
    const ct = await m.connect(target.token, ALL_EVENTS);
    const started = await ring(m, stranger, target);
    assert.equal(started.status, 201);
    assert.deepEqual([started.body.call.status, started.body.call.ringExpiresAt, started.body.join], ['Missed', null, undefined]);
    await m.dispatch();
    await waitFor('the missed-call request', () => ofEvent(ct, 'call_missed').length === 1);
    assert.equal(ofEvent(ct, 'call_missed')[0]!.CallId, started.body.call.id);
    assert.deepEqual(ofEvent(ct, 'call_invited'), [], 'never rung');
    assert.deepEqual(await callEvents(m, target), [['call_missed', started.body.call.id]]);
    assert.deepEqual(await callEvents(m, stranger), [['call_missed', started.body.call.id]]);
    const answer = await m.call<{ code: string }>(target.token, 'POST', `/api/messenger/calls/${started.body.call.id}/answer`);
    assert.deepEqual([answer.status, answer.body.code], [409, 'MSG_CALL_INVALID_STATE']);
  });

  test('a Direct chat rings only once the callee accepted it; an Accepted contact rings', async () => {
    const m = await messengerApp();
    const [stranger, target, friend] = [await m.user(), await m.user(), await m.user()];
    const chat = await m.call<{ id: string }>(stranger.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [target.id] });
    assert.equal((await ring(m, stranger, target)).body.call.status, 'Missed', 'an unanswered message request is no consent');
    await m.accept(target.token, chat.body.id);
    const accepted = await ring(m, stranger, target);
    assert.equal(accepted.body.call.status, 'Ringing');
    assert.ok(accepted.body.join?.accessToken);
    await m.contacts(friend, target);
    const fromFriend = await ring(m, friend, target);
    assert.equal(fromFriend.body.call.status, 'Ringing');
    await m.dispatch();
    const invites = (await callEvents(m, target)).filter(([name]) => name === 'call_invited').map(([, id]) => id);
    assert.deepEqual(invites, [accepted.body.call.id, fromFriend.body.call.id]);
  });
});
