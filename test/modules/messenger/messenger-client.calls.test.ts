import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerClient, type ChatMessage, type MessengerClientOptions, type SentMessage } from '../../../packages/messenger-client/src/index.ts';
import { messengerApp, type MessengerApp } from './support/app.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * What a chat app does with the client library, against the real service: resume after a page
 * reload from a stored cursor, create and accept a chat, page history both ways, edit and delete,
 * one message shape for sent and received, the chat list's last-message preview.
 */

const port = (m: MessengerApp) => (m.app.server.address() as { port: number }).port;

function client(m: MessengerApp, token: string, extra: Partial<MessengerClientOptions> = {}) {
  const messages: ChatMessage[] = [];
  const events: { name: string; payload: Record<string, unknown> }[] = [];
  const changes: Partial<ChatMessage>[] = [];
  const sent: SentMessage[] = [];
  const c = new MessengerClient({
    baseUrl: `http://127.0.0.1:${port(m)}`,
    token,
    backoff: { minMs: 20, baseMs: 50, capMs: 200 },
    onMessage: (x) => messages.push(x),
    onEvent: (name, payload) => events.push({ name, payload: payload as unknown as Record<string, unknown> }),
    onMessageChanged: (x) => changes.push(x),
    onSent: (_p, x) => sent.push(x),
    ...extra,
  });
  after(() => c.stop());
  return { c, messages, events, changes, sent };
}

describe('client library: resume across reloads, chats, history, edits', () => {
  test('a new client given the old one\'s stored cursor (resumeFrom) gets what happened in between, once', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const stored = new Map<string, string>(); // stands in for the page's localStorage
    const first = client(m, bob.token, { onCursor: (cur) => stored.set('cursor', cur) });
    await first.c.start();
    const chat = await client(m, alice.token).c.createChat({ kind: 'Group', title: 'T', memberUserIds: [bob.id] });
    await m.dispatch();
    await waitFor('the chat creation reached bob', () => first.events.some((e) => e.name === 'chat_updated'));
    assert.equal(stored.get('cursor'), first.c.cursor, 'onCursor hands over what client.cursor reads');
    await first.c.stop(); // the page is closed

    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'while you were away' });
    await m.call(alice.token, 'PATCH', `/api/messenger/chats/${chat.id}`, { title: 'Renamed' });
    await m.dispatch(); // pushed to nobody

    const reloaded = client(m, bob.token, { resumeFrom: stored.get('cursor')! });
    await reloaded.c.start();
    await reloaded.c.settled();
    assert.deepEqual(reloaded.messages.map((x) => x.body), ['while you were away']);
    assert.deepEqual(reloaded.events.map((e) => [e.name, e.payload.Change]), [['chat_updated', 'Renamed']], 'the creation before the cursor is not handed over again');
    assert.notEqual(reloaded.c.cursor, stored.get('cursor'), 'the cursor moved on');
  });

  test('createChat makes a message request to a non-contact; acceptChat answers it', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = await client(m, alice.token).c.createChat({ kind: 'Direct', memberUserIds: [bob.id] });
    assert.equal(chat.participants.find((p) => p.userId === bob.id)?.accepted, false);
    const accepted = await client(m, bob.token).c.acceptChat(chat.id);
    assert.equal(accepted.participants.find((p) => p.userId === bob.id)?.accepted, true);
  });

  test('history pages back with beforeSeq and forward with afterSeq, both in ascending order', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const a = client(m, alice.token);
    const chat = await a.c.createChat({ kind: 'Group', title: 'T', memberUserIds: [bob.id] });
    for (let i = 1; i <= 5; i++) await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: `m${i}` });
    const b = client(m, bob.token);
    const newest = await b.c.history(chat.id, { beforeSeq: 6, limit: 2 });
    assert.deepEqual([newest.items.map((x) => x.seq), newest.lastSeq], [[4, 5], 5]);
    const older = await b.c.history(chat.id, { beforeSeq: newest.items[0]!.seq, limit: 2 });
    assert.deepEqual(older.items.map((x) => x.body), ['m2', 'm3']);
    const forward = await b.c.history(chat.id, { afterSeq: 3 });
    assert.deepEqual(forward.items.map((x) => x.seq), [4, 5]);
    assert.equal(forward.items[0]!.messageId.length, 36, 'listed messages have the one shape: messageId');
  });

  test('sent and received messages have one shape; an edit and a deletion reach the other side once each', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const a = client(m, alice.token);
    const chat = await a.c.createChat({ kind: 'Group', title: 'T', memberUserIds: [bob.id] });
    const b = client(m, bob.token);
    b.c.trackChat(chat.id, 0);
    await Promise.all([a.c.start(), b.c.start()]);
    await a.c.send(chat.id, { kind: 'Text', body: 'hello' });
    await waitFor('acknowledged', () => a.sent.length === 1);
    await m.dispatch();
    await waitFor('received', () => b.messages.length === 1);
    const { id, ...sentShape } = a.sent[0]!;
    assert.equal(id, sentShape.messageId, 'the deprecated id still reads the same value');
    assert.deepEqual(sentShape, b.messages[0], 'what the sender is acknowledged with is what the other side receives');

    const edited = await a.c.editMessage(chat.id, sentShape.messageId, { body: 'hello, edited' });
    assert.deepEqual([edited.messageId, edited.body, edited.editedAt !== null], [sentShape.messageId, 'hello, edited', true]);
    await m.dispatch(); // pushed before the deletion: a push reads the message as it is when it goes out
    await waitFor('the edit', () => b.changes.length === 1);
    await a.c.deleteMessage(chat.id, sentShape.messageId);
    await m.dispatch();
    await waitFor('the deletion', () => b.changes.length === 2);
    assert.deepEqual(b.changes.map((x) => [x.messageId, x.body ?? null, x.deleted]), [[sentShape.messageId, 'hello, edited', false], [sentShape.messageId, null, true]]);
  });

  test('the chat list carries each chat\'s last message', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const a = client(m, alice.token);
    const chat = await a.c.createChat({ kind: 'Group', title: 'T', memberUserIds: [bob.id] });
    const empty = await a.c.createChat({ kind: 'Group', title: 'E', memberUserIds: [bob.id] });
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'latest' });
    const list = await client(m, bob.token).c.chatList();
    const byId = new Map(list.items.map((c) => [c.id, c]));
    assert.deepEqual([byId.get(chat.id)?.lastMessage?.preview, byId.get(chat.id)?.lastMessage?.senderUserId], ['latest', alice.id]);
    assert.equal(byId.get(empty.id)?.lastMessage, null);
  });
});
