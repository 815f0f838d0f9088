import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerClient, type ChatMessage } from '../../../../packages/messenger-client/src/index.ts';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * The blocked are never told (docs/security.md, "Blocked means blocked"): what the blocked user writes
 * in their Direct chat with the one who blocked them is sent as any message — 201, the same shape, an
 * idempotent resend, on their own devices and in their history — and withheld from the blocker: not in
 * the blocker's history, chat list, frames or event stream, and not among the recipients of its
 * MessagePosted event (what notifications go to). An unblock reveals none of it, and the blocker's
 * client library moves past the withheld Seq.
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
type Message = { id: string; seq: number; body: string | null; chatId: string; clientMessageId: string | null };
type Listed = { id: string; unreadCount: number; lastMessage: { seq: number; preview: string | null } | null };
const port = (m: MessengerApp) => (m.app.server.address() as { port: number }).port;

const send = (m: MessengerApp, u: User, chatId: string, body: string, clientMessageId?: string) =>
  m.call<Message & { code?: string }>(u.token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body, ...(clientMessageId ? { clientMessageId } : {}) });
const history = async (m: MessengerApp, u: User, chatId: string, page = '') =>
  (await m.call<{ items: Message[] }>(u.token, 'GET', `/api/messenger/chats/${chatId}/messages${page}`)).body.items.map((x) => [x.seq, x.body]);
const listed = async (m: MessengerApp, u: User, chatId: string) =>
  (await m.call<{ items: Listed[] }>(u.token, 'GET', '/api/messenger/chats')).body.items.find((c) => c.id === chatId)!;
const streamNames = async (m: MessengerApp, u: User, after: string) =>
  (await m.call<{ events: { name: string; payload: Record<string, unknown> }[] }>(u.token, 'GET', `/api/events?after=${after}`)).body.events;
const head = async (m: MessengerApp, u: User) => (await m.call<{ next: string }>(u.token, 'GET', '/api/events')).body.next;

/** Alice and bob in a Direct chat both accepted, bob's first message in it, then alice blocks bob; carol writes to alice elsewhere (the fence). */
async function blockedPair(m: MessengerApp) {
  const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
  const chatId = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body.id;
  await m.accept(bob.token, chatId);
  const before = await send(m, bob, chatId, 'before');
  assert.equal(before.status, 201);
  assert.equal((await m.call(alice.token, 'PUT', `/api/messenger/blacklist/${bob.id}`)).status, 200);
  const fenceChat = (await m.call<{ id: string }>(carol.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [alice.id] })).body.id;
  /** Every frame dispatched to alice's socket before a message of carol's has arrived once that message has. */
  const fence = async (ca: TestClient, body: string) => {
    assert.equal((await send(m, carol, fenceChat, body)).status, 201);
    await m.dispatch();
    await waitFor(`fence ${body}`, () => ofEvent(ca, 'message_received').some((p) => p.Body === body));
  };
  return { alice, bob, chatId, before: before.body, fence };
}

describe('a message of the blocked in their Direct chat with the blocker', () => {
  test('is accepted as any send: 201 with the same shape, an idempotent resend, on the sender’s own devices, history and chat list', async () => {
    const m = await messengerApp();
    const { bob, chatId, before } = await blockedPair(m);
    const cb = await m.connect(bob.token, ALL_EVENTS);
    await m.dispatch();
    const from = await head(m, bob);
    const clientMessageId = crypto.randomUUID();
    const sent = await send(m, bob, chatId, 'hidden', clientMessageId);
    assert.equal(sent.status, 201, 'the blocked are never told');
    assert.deepEqual(Object.keys(sent.body).sort(), Object.keys(before).sort());
    assert.deepEqual([sent.body.seq, sent.body.body, sent.body.clientMessageId], [2, 'hidden', clientMessageId]);
    const again = await send(m, bob, chatId, 'hidden', clientMessageId);
    assert.deepEqual([again.status, again.body.id], [200, sent.body.id]);
    await m.dispatch();
    await waitFor("the message on bob's device", () => ofEvent(cb, 'message_received').some((p) => p.MessageId === sent.body.id));
    assert.deepEqual(await history(m, bob, chatId), [[1, 'before'], [2, 'hidden']]);
    assert.equal((await listed(m, bob, chatId)).lastMessage?.preview, 'hidden');
    const synced = (await m.call<{ items: Listed[] }>(bob.token, 'GET', `/api/messenger/chats?after=${from}`)).body.items;
    assert.deepEqual(synced.map((c) => [c.id, c.lastMessage?.preview]), [[chatId, 'hidden']], "a change in the sender's chat-list sync");
  });

  test('never reaches the blocker: not in their history, chat list or its sync, frames or event stream, nor among its event’s recipients', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId, fence } = await blockedPair(m);
    const ca = await m.connect(alice.token, ALL_EVENTS);
    await m.dispatch();
    const from = await head(m, alice);
    const sent = (await send(m, bob, chatId, 'hidden')).body;
    await fence(ca, 'after the hidden one');
    assert.equal(ofEvent(ca, 'message_received').some((p) => p.MessageId === sent.id), false, 'no frame');
    assert.deepEqual(
      (await streamNames(m, alice, from)).filter((e) => e.payload.ChatId === chatId),
      [],
      'no event in her stream',
    );
    const synced = (await m.call<{ items: Listed[] }>(alice.token, 'GET', `/api/messenger/chats?after=${from}`)).body.items;
    assert.equal(synced.some((c) => c.id === chatId), false, 'not a change in her chat-list sync');
    assert.deepEqual(await history(m, alice, chatId), [[1, 'before']]);
    assert.deepEqual(await history(m, alice, chatId, '?beforeSeq=3'), [[1, 'before']]);
    const row = await listed(m, alice, chatId);
    assert.deepEqual([row.lastMessage?.seq, row.lastMessage?.preview, row.unreadCount], [1, 'before', 1]);
    const { rows } = await m.pool.query(`select payload from platform.outbox where payload->>'MessageId' = $1`, [sent.id]);
    assert.deepEqual([rows.length, rows[0].payload.RecipientUserIds, rows[0].payload.RequestUserIds], [1, [], []], 'its event exists, with no one to notify');
  });

  test('its edit and deletion reach only the sender; to the blocker it does not exist', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId, fence } = await blockedPair(m);
    const [ca, cb] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(bob.token, ALL_EVENTS)];
    const sent = (await send(m, bob, chatId, 'hidden')).body;
    const path = `/api/messenger/chats/${chatId}/messages/${sent.id}`;
    assert.equal((await m.call(bob.token, 'PATCH', path, { body: 'edited' })).status, 200);
    assert.equal((await m.call<{ code: string }>(alice.token, 'DELETE', path)).body.code, 'MSG_MESSAGE_NOT_FOUND');
    assert.equal((await m.call(bob.token, 'DELETE', path)).status, 204);
    await fence(ca, 'after the changes');
    await waitFor("bob's edit and deletion", () => ofEvent(cb, 'message_edited').length === 1 && ofEvent(cb, 'message_deleted').length === 1);
    assert.deepEqual([ofEvent(ca, 'message_edited'), ofEvent(ca, 'message_deleted')], [[], []]);
  });

  test('stays withheld after an unblock; the blocker’s client library moves past its Seq and gets what follows', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId } = await blockedPair(m);
    const messages: ChatMessage[] = [];
    const client = new MessengerClient({
      baseUrl: `http://127.0.0.1:${port(m)}`,
      accessTokenFactory: () => alice.token,
      backoff: { minMs: 20, baseMs: 50, capMs: 200 },
      onMessage: (x) => messages.push(x),
    });
    after(() => client.stop());
    client.trackChat(chatId, 0);
    await client.start();
    await waitFor("alice's refill of the first message", () => messages.length === 1);
    assert.equal((await send(m, bob, chatId, 'hidden')).status, 201);
    assert.equal((await m.call(alice.token, 'DELETE', `/api/messenger/blacklist/${bob.id}`)).status, 200);
    assert.equal((await send(m, bob, chatId, 'after')).status, 201);
    await m.dispatch();
    await waitFor('the message after the unblock', () => messages.some((x) => x.body === 'after'));
    assert.deepEqual(messages.map((x) => [x.seq, x.body]), [[1, 'before'], [3, 'after']]);
    assert.deepEqual(await history(m, alice, chatId), [[1, 'before'], [3, 'after']]);
    assert.equal((await listed(m, alice, chatId)).unreadCount, 2);
  });
});
