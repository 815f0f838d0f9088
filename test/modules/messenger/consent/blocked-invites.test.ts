import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * A block stops a conference's ring as it stops a call (blacklist.md): an invite skips a member on
 * either side of a block with the inviter. The blocked inviter is never told: the invite's answer
 * shows the member who blocked them Invited, as any invitee, but no conference_invited reaches her.
 */

type Conference = { id: string; participants: { userId: string; status: string }[] };
type User = Awaited<ReturnType<MessengerApp['user']>>;

async function block(m: MessengerApp, owner: User, other: User) {
  assert.equal((await m.call(owner.token, 'PUT', `/api/messenger/blacklist/${other.id}`)).status, 200);
}
/** A group message `client` receives: every frame dispatched to that socket before it has arrived. */
async function fence(m: MessengerApp, from: User, chatId: string, client: TestClient, body: string) {
  assert.equal((await m.call(from.token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body })).status, 201);
  await m.dispatch();
  await waitFor(`fence ${body}`, () => ofEvent(client, 'message_received').some((p) => p.Body === body));
}

/** A group of mal (owner), bob and carol, everyone connected, and mal's conference in it. */
async function conference(m: MessengerApp) {
  const [mal, bob, carol] = [await m.user(), await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(mal.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal', memberUserIds: [bob.id, carol.id] })).body;
  const [cb, cc] = [await m.connect(bob.token, ALL_EVENTS), await m.connect(carol.token, ALL_EVENTS)];
  const started = await m.call<{ conference: Conference }>(mal.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Video' });
  assert.equal(started.status, 201);
  return { mal, bob, carol, chatId: chat.id, id: started.body.conference.id, cb, cc };
}

describe('conference invites across a block', () => {
  test('a member who blocked the inviter is not rung (no conference_invited, no join model), and the inviter sees the same answer as for anyone', async () => {
    const m = await messengerApp();
    const { mal, bob, carol, chatId, id, cb, cc } = await conference(m);
    await block(m, carol, mal);
    const invited = await m.call<Conference>(mal.token, 'POST', `/api/messenger/conferences/${id}/invite`, { userIds: [bob.id, carol.id] });
    assert.equal(invited.status, 200);
    const status = new Map(invited.body.participants.map((p) => [p.userId, p.status]));
    assert.deepEqual([status.get(bob.id), status.get(carol.id)], ['Invited', 'Invited'], 'the blocked inviter is not told');
    await m.dispatch();
    await waitFor("bob's invitation", () => ofEvent(cb, 'conference_invited').length === 1);
    await fence(m, bob, chatId, cc, 'after the invites');
    assert.deepEqual(ofEvent(cc, 'conference_invited'), [], 'carol is not rung by the user she blocked');
  });

  test('a member the inviter blocked is skipped: not Invited, not rung', async () => {
    const m = await messengerApp();
    const { mal, bob, carol, chatId, id, cc } = await conference(m);
    await block(m, mal, carol);
    const invited = await m.call<Conference>(mal.token, 'POST', `/api/messenger/conferences/${id}/invite`, { userIds: [carol.id] });
    assert.equal(invited.status, 200);
    assert.equal(invited.body.participants.find((p) => p.userId === carol.id), undefined);
    await m.dispatch();
    await fence(m, bob, chatId, cc, 'after the invite');
    assert.deepEqual(ofEvent(cc, 'conference_invited'), []);
  });
});
