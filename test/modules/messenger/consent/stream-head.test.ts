import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * The event stream's head is the reader's own (docs/realtime.md, "The events stream"): the newest
 * event that reader can read. A global head moved with every event pushed to anyone — by one when
 * the addressee of a message request read it, a read the consent rules keep on the reader's own
 * devices (docs/security.md, "Consent"). The chat list's sync token starts from the same head.
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
const head = async (m: MessengerApp, u: User) => {
  const res = await m.call<{ events: unknown[]; next: string }>(u.token, 'GET', '/api/events');
  assert.equal(res.status, 200);
  return res.body.next;
};
const listToken = async (m: MessengerApp, u: User) => (await m.call<{ next: string }>(u.token, 'GET', '/api/messenger/chats')).body.next;

describe("the stream's head is per reader", () => {
  test("the addressee's read of a message request, and others' events, do not move the sender's head or chat-list token; the sender's own events do", async () => {
    const m = await messengerApp();
    const [stranger, target, carol, dave] = [await m.user(), await m.user(), await m.user(), await m.user()];
    const chat = await m.call<{ id: string }>(stranger.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [target.id] });
    assert.equal((await m.call(stranger.token, 'POST', `/api/messenger/chats/${chat.body.id}/messages`, { kind: 'Text', body: 'hi?' })).status, 201);
    await m.dispatch();
    const [before, tokenBefore] = [await head(m, stranger), await listToken(m, stranger)];
    assert.equal(tokenBefore, before, 'the chat list starts from the same head');

    assert.equal((await m.call(target.token, 'POST', `/api/messenger/chats/${chat.body.id}/read`, { seq: 1 })).status, 200);
    const other = await m.call<{ id: string }>(carol.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [dave.id] });
    assert.equal((await m.call(carol.token, 'POST', `/api/messenger/chats/${other.body.id}/messages`, { kind: 'Text', body: 'elsewhere' })).status, 201);
    await m.dispatch();
    assert.notEqual(await head(m, target), before, "the reader's own receipt moves the reader's head");
    assert.equal(await head(m, stranger), before, "the sender's head does not move");
    assert.equal(await listToken(m, stranger), before, "nor the sender's chat-list token");
    const resumed = await m.call<{ events: unknown[]; next: string }>(stranger.token, 'GET', `/api/events?after=${before}`);
    assert.deepEqual([resumed.status, resumed.body.events, resumed.body.next], [200, [], before]);

    assert.equal((await m.call(target.token, 'POST', `/api/messenger/chats/${chat.body.id}/messages`, { kind: 'Text', body: 'who?' })).status, 201);
    await m.dispatch();
    const after = await head(m, stranger);
    assert.notEqual(after, before, "an event the sender reads moves the sender's head");
    const page = await m.call<{ events: { name: string }[]; next: string }>(stranger.token, 'GET', `/api/events?after=${before}`);
    assert.deepEqual([page.body.events.map((e) => e.name), page.body.next], [['message_received'], after]);
  });
});
