import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * Presence follows the current consent (docs/security.md, "Consent"): removing an Accepted contact
 * takes back the consent it gave, the Direct chat the two opened as contacts included, so neither
 * sees the other's presence any more — over REST or in presence_changed frames.
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
type Chat = { id: string; participants: { userId: string; accepted: boolean }[] };
const presenceFrames = (c: TestClient, of: User) => c.received.filter((r) => r.event === 'presence_changed' && (r.payload as { UserId: string }).UserId === of.id);

async function presenceOf(m: MessengerApp, viewer: User, target: User) {
  const res = await m.call<{ users: { online: boolean | null }[] }>(viewer.token, 'GET', `/api/messenger/presence?userIds=${target.id}`);
  assert.equal(res.status, 200);
  return res.body.users[0]!.online;
}
async function contacts(m: MessengerApp, a: User, b: User): Promise<string> {
  const req = await m.call<{ id: string }>(a.token, 'POST', '/api/messenger/contacts/requests', { phone: b.phone });
  assert.equal((await m.call(b.token, 'POST', `/api/messenger/contacts/${req.body.id}/accept`)).status, 200);
  return req.body.id;
}

describe('presence after a contact is removed', () => {
  test('the Direct chat two contacts opened stops sharing presence once one removes the other, both ways, until the remover writes in it again', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const contactId = await contacts(m, alice, bob);
    const chat = await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] });
    assert.ok(chat.body.participants.every((p) => p.accepted), 'contacts accept by joining');
    const b1 = await m.connect(bob.token, []);
    assert.equal(await presenceOf(m, alice, bob), true);

    assert.equal((await m.call(bob.token, 'DELETE', `/api/messenger/contacts/${contactId}`)).status, 204);
    assert.equal(await presenceOf(m, alice, bob), null, 'the remover is unknown to the removed');
    assert.equal(await presenceOf(m, bob, alice), null, 'and the removed to the remover');
    const seen = await m.call<Chat>(alice.token, 'GET', `/api/messenger/chats/${chat.body.id}`);
    assert.equal(seen.body.participants.find((p) => p.userId === bob.id)!.accepted, false, 'the chat is a request to the remover again');

    // Bob going offline reaches alice no more; carol, alice's contact, fences the frames after it.
    const ca = await m.connect(alice.token, ['presence_changed']);
    const carol = await m.user();
    await contacts(m, carol, alice);
    await b1.connection.stop();
    await m.connect(carol.token, []);
    await waitFor("carol's flip", () => presenceFrames(ca, carol).length > 0);
    assert.deepEqual(presenceFrames(ca, bob), []);

    assert.equal((await m.call(bob.token, 'POST', `/api/messenger/chats/${chat.body.id}/messages`, { kind: 'Text', body: 'hi again' })).status, 201);
    assert.equal(await presenceOf(m, alice, bob), false, 'writing back accepts the chat again: known (offline) once more');
  });
});
