import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp, type MessengerApp } from '../support/app.ts';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * Consent (docs/security.md, "Consent"), through the whole app with the official SignalR client: a
 * Direct chat or group invitation from someone who is not an Accepted contact is a message request;
 * until its addressee accepts it or writes in it, the sender learns nothing of the addressee's
 * presence, typing or read position — over REST or in frames — and a block takes all of it back at once.
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
interface Participant {
  userId: string;
  lastReadSeq: number;
  accepted: boolean;
}
interface Chat {
  id: string;
  participants: Participant[];
}
const EVENTS = ['presence_changed', 'typing', 'read_receipt_updated', 'message_received', 'chat_updated'];
const of = (c: TestClient, event: string) => c.received.filter((r) => r.event === event).map((r) => r.payload as Record<string, unknown>);
const participant = (chat: Chat, u: User) => chat.participants.find((p) => p.userId === u.id)!;

async function presenceOf(m: MessengerApp, viewer: User, target: User) {
  const res = await m.call<{ users: { online: boolean | null }[] }>(viewer.token, 'GET', `/api/messenger/presence?userIds=${target.id}`);
  assert.equal(res.status, 200);
  return res.body.users[0]!.online;
}
const chatAs = async (m: MessengerApp, u: User, chatId: string) => (await m.call<Chat>(u.token, 'GET', `/api/messenger/chats/${chatId}`)).body;
async function send(m: MessengerApp, u: User, chatId: string, body: string) {
  assert.equal((await m.call(u.token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body })).status, 201);
}
async function read(m: MessengerApp, u: User, chatId: string, seq: number) {
  assert.equal((await m.call(u.token, 'POST', `/api/messenger/chats/${chatId}/read`, { seq })).status, 200);
}
/** A message of `from`'s, dispatched and seen by `client`: whatever the dispatcher pushed before it to that socket has arrived. */
async function fence(m: MessengerApp, from: User, chatId: string, client: TestClient, body: string) {
  await send(m, from, chatId, body);
  await m.dispatch();
  await waitFor(`fence ${body}`, () => of(client, 'message_received').some((p) => p.Body === body));
}
/** A presence flip of a fresh contact of `viewer`'s: presence flips before it have reached `client`. */
async function presenceFence(m: MessengerApp, viewer: User, client: TestClient) {
  const zed = await m.user();
  const req = await m.call<{ id: string }>(zed.token, 'POST', '/api/messenger/contacts/requests', { phone: viewer.phone });
  assert.equal((await m.call(viewer.token, 'POST', `/api/messenger/contacts/${req.body.id}/accept`)).status, 200);
  await m.connect(zed.token, []);
  await waitFor("zed's flip", () => of(client, 'presence_changed').some((p) => p.UserId === zed.id));
}

describe('consent', () => {
  test("a stranger's Direct chat is a request: nothing of the addressee's presence, typing or reads reaches the stranger until accepted", async () => {
    const m = await messengerApp();
    const [stranger, target] = [await m.user(), await m.user()];
    const opened = await m.call<Chat>(stranger.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [target.id] });
    assert.equal(opened.status, 201);
    const chatId = opened.body.id;
    assert.deepEqual([participant(opened.body, stranger).accepted, participant(opened.body, target).accepted], [true, false]);
    const s = await m.connect(stranger.token, EVENTS);
    await send(m, stranger, chatId, 'hello?');

    const t1 = await m.connect(target.token, []);
    await t1.connection.invoke('Typing', chatId);
    await read(m, target, chatId, 1);
    await fence(m, stranger, chatId, s, 'still there?');
    await presenceFence(m, stranger, s);
    assert.equal(await presenceOf(m, stranger, target), null, 'REST answers unknown');
    assert.equal(participant(await chatAs(m, stranger, chatId), target).lastReadSeq, 0, 'the read position is hidden');
    assert.deepEqual(of(s, 'presence_changed').filter((p) => p.UserId === target.id), [], 'no presence frame');
    assert.deepEqual(of(s, 'typing'), [], 'no typing frame');
    assert.deepEqual(of(s, 'read_receipt_updated'), [], 'no read receipt');

    const accepted = await m.call<Chat>(target.token, 'POST', `/api/messenger/chats/${chatId}/accept`);
    assert.equal(accepted.status, 200);
    assert.equal(participant(accepted.body, target).accepted, true);
    await m.dispatch();
    await waitFor('the stranger is told the request was accepted', () => of(s, 'chat_updated').some((p) => p.Change === 'RequestAccepted'));
    assert.equal(await presenceOf(m, stranger, target), true);
    assert.equal(participant(await chatAs(m, stranger, chatId), target).lastReadSeq, 1);
    const t2 = await m.connect(target.token, []); // its own throttle: t1's Typing above was less than 3 s ago
    await t2.connection.invoke('Typing', chatId);
    await read(m, target, chatId, 2);
    await m.dispatch();
    await waitFor('typing and the receipt reach the stranger', () => of(s, 'typing').length === 1 && of(s, 'read_receipt_updated').length === 1);
    assert.deepEqual(of(s, 'read_receipt_updated').map((p) => [p.UserId, p.LastReadSeq]), [[target.id, 2]]);
    await Promise.all([t1.connection.stop(), t2.connection.stop()]);
    await waitFor('the stranger sees the target go offline', () => of(s, 'presence_changed').some((p) => p.UserId === target.id && p.Online === false));

    const again = await m.call(target.token, 'POST', `/api/messenger/chats/${chatId}/accept`);
    assert.equal(again.status, 200, 'accepting an accepted chat is a no-op');
    const { rows } = await m.pool.query("select count(*)::int as n from messenger.chat_events where chat_id = $1 and kind = 'RequestAccepted'", [chatId]);
    assert.equal(rows[0].n, 1, 'and announces nothing again');
  });

  test('writing back answers the request; so do opening the Direct chat from the other side and accepting the sender as a contact', async () => {
    const m = await messengerApp();
    const [stranger, target, other, third] = [await m.user(), await m.user(), await m.user(), await m.user()];
    const chat = (await m.call<Chat>(stranger.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [target.id] })).body;
    assert.equal(await presenceOf(m, stranger, target), null);
    await send(m, target, chat.id, 'hi, who is this?');
    assert.equal(participant(await chatAs(m, stranger, chat.id), target).accepted, true);
    assert.equal(await presenceOf(m, stranger, target), false, 'known now: offline');

    const second = (await m.call<Chat>(stranger.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [other.id] })).body;
    const reopened = await m.call<Chat>(other.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [stranger.id] });
    assert.deepEqual([reopened.status, reopened.body.id, participant(reopened.body, other).accepted], [200, second.id, true]);

    const thirdChat = (await m.call<Chat>(stranger.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [third.id] })).body;
    const req = await m.call<{ id: string }>(stranger.token, 'POST', '/api/messenger/contacts/requests', { phone: third.phone });
    assert.equal((await m.call(third.token, 'POST', `/api/messenger/contacts/${req.body.id}/accept`)).status, 200);
    assert.equal(participant(await chatAs(m, stranger, thirdChat.id), third).accepted, true);
  });

  test("a group invitation from a non-contact is a request: the invitee's typing and reads stay private until accepted", async () => {
    const m = await messengerApp();
    const [owner, friend, stranger] = [await m.user(), await m.user(), await m.user()];
    const req = await m.call<{ id: string }>(owner.token, 'POST', '/api/messenger/contacts/requests', { phone: friend.phone });
    assert.equal((await m.call(friend.token, 'POST', `/api/messenger/contacts/${req.body.id}/accept`)).status, 200);
    const chat = (await m.call<Chat>(owner.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'G', memberUserIds: [friend.id, stranger.id] })).body;
    assert.deepEqual([owner, friend, stranger].map((u) => participant(chat, u).accepted), [true, true, false], 'a contact joins accepted');
    const f = await m.connect(friend.token, EVENTS);
    const x = await m.connect(stranger.token, []);
    await x.connection.invoke('Typing', chat.id);
    await send(m, owner, chat.id, 'welcome');
    await read(m, stranger, chat.id, 1);
    await fence(m, owner, chat.id, f, 'anyone?');
    assert.deepEqual([of(f, 'typing'), of(f, 'read_receipt_updated')], [[], []]);
    assert.equal(participant(await chatAs(m, friend, chat.id), stranger).lastReadSeq, 0);

    await m.accept(stranger.token, chat.id);
    const x2 = await m.connect(stranger.token, []);
    await x2.connection.invoke('Typing', chat.id);
    await read(m, stranger, chat.id, 2);
    await m.dispatch();
    await waitFor("the invitee's typing and receipt reach the chat", () => of(f, 'typing').length === 1 && of(f, 'read_receipt_updated').length === 1);
    assert.deepEqual(of(f, 'typing'), [{ ChatId: chat.id, UserId: stranger.id }]);
  });

  test('a block takes consent back at once: presence, typing and reads stop reaching the blocked user', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body;
    await m.accept(bob.token, chat.id);
    const a = await m.connect(alice.token, EVENTS);
    const b = await m.connect(bob.token, []);
    await send(m, alice, chat.id, 'one');
    await send(m, alice, chat.id, 'two');
    await read(m, bob, chat.id, 1);
    await m.dispatch();
    await waitFor("bob's first receipt reaches alice", () => of(a, 'read_receipt_updated').length === 1);
    assert.equal(await presenceOf(m, alice, bob), true);
    assert.equal(participant(await chatAs(m, alice, chat.id), bob).lastReadSeq, 1);

    assert.equal((await m.call(bob.token, 'PUT', `/api/messenger/blacklist/${alice.id}`)).status, 200);
    assert.equal(await presenceOf(m, alice, bob), null, 'REST answers unknown at once');
    assert.equal(participant(await chatAs(m, alice, chat.id), bob).lastReadSeq, 0, 'the read position is hidden at once');
    const ownDevice = await m.connect(bob.token, ['read_receipt_updated']);
    await b.connection.invoke('Typing', chat.id);
    await read(m, bob, chat.id, 2);
    await m.dispatch();
    await waitFor("bob's own devices still get his receipt", () => of(ownDevice, 'read_receipt_updated').length === 1);
    await b.connection.stop();
    await ownDevice.connection.stop();
    await presenceFence(m, alice, a);
    assert.deepEqual(of(a, 'typing'), [], 'no typing frame');
    assert.deepEqual(of(a, 'presence_changed').filter((p) => p.UserId === bob.id && p.Online === false), [], 'no offline flip');
    assert.deepEqual(of(a, 'read_receipt_updated').map((p) => p.LastReadSeq), [1], 'no receipt after the block');
  });

  test('accepting a chat one is not in is 404; a malformed id is 400; both change nothing', async () => {
    const m = await messengerApp();
    const [alice, bob, eve] = [await m.user(), await m.user(), await m.user()];
    const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body;
    const notMine = await m.call<{ code: string }>(eve.token, 'POST', `/api/messenger/chats/${chat.id}/accept`);
    assert.deepEqual([notMine.status, notMine.body.code], [404, 'MSG_CHAT_NOT_FOUND']);
    const malformed = await m.call<{ code: string }>(eve.token, 'POST', '/api/messenger/chats/not-a-uuid/accept');
    assert.deepEqual([malformed.status, malformed.body.code], [400, 'VALIDATION_FAILED']);
    assert.equal(participant(await chatAs(m, alice, chat.id), bob).accepted, false);
  });
});
