import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
// By path, not the workspace name: the package as it is in this tree.
import { MessengerClient, MessengerError } from '../../../packages/messenger-client/src/index.ts';
import { messengerApp, type MessengerApp } from './support/app.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The client library's presence, typing and chat list against the real service: presence_changed
 * and typing arrive as typed events, typing() skips calls the server would throttle and surfaces a
 * refusal, presence() answers peers and leaves strangers unknown, chatList() carries unread counts
 * and syncs by token.
 */

function startClient(m: MessengerApp, token: string) {
  const events: { name: string; payload: Record<string, unknown> }[] = [];
  const client = new MessengerClient({
    baseUrl: `http://127.0.0.1:${(m.app.server.address() as { port: number }).port}`,
    accessTokenFactory: () => token,
    backoff: { minMs: 20, baseMs: 50, capMs: 200 },
    onEvent: (name, payload) => events.push({ name, payload: payload as unknown as Record<string, unknown> }),
  });
  after(() => client.stop());
  return { client, events };
}

async function directPair(m: MessengerApp) {
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body;
  await m.accept(bob.token, chat.id); // consent: presence and typing flow only in an accepted chat
  return { alice, bob, chat };
}

describe('client library: presence, typing, chat list', () => {
  test("a Direct-chat peer's presence and typing arrive as events; presence() answers peers, strangers unknown", async () => {
    const m = await messengerApp();
    const { alice, bob, chat } = await directPair(m);
    const stranger = await m.user();
    const b = startClient(m, bob.token);
    await b.client.start();
    const a = startClient(m, alice.token);
    await a.client.start();
    await waitFor('bob sees alice online', () => b.events.some((e) => e.name === 'presence_changed'));
    assert.deepEqual(b.events.filter((e) => e.name === 'presence_changed').map((e) => e.payload), [{ UserId: alice.id, Online: true, LastSeenAt: null }]);

    await a.client.typing(chat.id);
    await a.client.typing(chat.id); // within the interval: not sent
    await waitFor('bob sees alice typing', () => b.events.some((e) => e.name === 'typing'));
    assert.deepEqual(await b.client.presence([alice.id, stranger.id]), [
      { userId: alice.id, online: true, lastSeenAt: null },
      { userId: stranger.id, online: null, lastSeenAt: null },
    ]);
    assert.deepEqual(b.events.filter((e) => e.name === 'typing').map((e) => e.payload), [{ ChatId: chat.id, UserId: alice.id }], 'one typing event');
    await assert.rejects(a.client.typing('00000000-0000-4000-8000-000000000000'), (e) => e instanceof MessengerError && e.code === 'MSG_CHAT_NOT_FOUND' && e.status === 404);

    await a.client.stop();
    await waitFor('bob sees alice offline', () => b.events.filter((e) => e.name === 'presence_changed').length === 2);
    assert.deepEqual(b.events.at(-1)!.payload, { UserId: alice.id, Online: false, LastSeenAt: m.clock.now().toISOString() });
  });

  test('chatList gives unread counts and, with its token, only what changed since', async () => {
    const m = await messengerApp();
    const { alice, bob, chat } = await directPair(m);
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'one' });
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'two' });
    await m.dispatch();
    const b = startClient(m, bob.token);
    const first = await b.client.chatList();
    assert.deepEqual(first.items.map((c) => [c.id, c.unreadCount]), [[chat.id, 2]]);
    const unchanged = await b.client.chatList(first.next);
    assert.deepEqual(unchanged.items, [], 'nothing changed since the token');
    assert.equal(await b.client.markRead(chat.id, 2), 2);
    await m.dispatch();
    const read = await b.client.chatList(first.next);
    assert.deepEqual(read.items.map((c) => [c.id, c.unreadCount]), [[chat.id, 0]]);
  });
});
