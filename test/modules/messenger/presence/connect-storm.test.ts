import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp, type MessengerApp } from '../support/app.ts';
import { connectClient, type TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { chatGroup } from '../../../../src/modules/messenger/model/chat-kinds.ts';

/**
 * Connects that arrive together (a reconnect storm) share their reads: the hub's access check, the
 * messenger's group resolution and the presence announcement each read once per event-loop turn
 * for all of that turn's connects. These prove that sharing changes no one's answer: each connect
 * gets its own user's chats and verdict, and a membership change is seen by the next connect.
 */

const probes = (c: TestClient) => c.received.filter((r) => r.event === 'probe').map((r) => (r.payload as { chat: number }).chat);

async function groupChat(m: MessengerApp, ownerToken: string, memberIds: string[]): Promise<string> {
  const res = await m.call<{ id: string }>(ownerToken, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'storm', memberUserIds: memberIds });
  assert.equal(res.status, 201);
  return res.body.id;
}

describe('connects of one turn (reconnect storm)', () => {
  test('many concurrent connects each join exactly their own chats', async () => {
    const m = await messengerApp({}, { rateLimitChatChangesPerMinute: 0 });
    const owner = await m.user();
    const users = await Promise.all(Array.from({ length: 24 }, () => m.user()));
    // Chat k holds users 2k and 2k+1 (and the owner, who stays offline).
    // One after another: the owner's requests in progress are bounded (HTTP_MAX_CONCURRENT_REQUESTS_PER_USER).
    const chats: string[] = [];
    for (let k = 0; k < 12; k++) chats.push(await groupChat(m, owner.token, [users[2 * k]!.id, users[2 * k + 1]!.id]));
    await m.dispatch(); // the chats' own frames go out before the clients connect

    const clients = await Promise.all(users.map((u) => m.connect(u.token, ['probe'])));
    for (const [k, chatId] of chats.entries()) await m.app.platform.hub.send(chatGroup(chatId), 'probe', { chat: k });
    await waitFor('every client got its chat', () => clients.every((c) => probes(c).length >= 1));
    await new Promise((r) => setTimeout(r, 100)); // a stray frame to another chat would land by now
    for (const [i, c] of clients.entries()) assert.deepEqual(probes(c), [Math.floor(i / 2)], `user ${i} receives only its own chat`);
  });

  test('an inactive user connecting together with active ones is refused; the others connect', async () => {
    const m = await messengerApp();
    const active = await Promise.all(Array.from({ length: 10 }, () => m.user()));
    const inactive = await m.user();
    await m.pool.query('update messenger.users set is_active = false where id = $1', [inactive.id]);

    const tries = await Promise.allSettled([...active, inactive].map((u) => m.connect(u.token, [])));
    assert.deepEqual(
      tries.map((t) => t.status),
      [...active.map(() => 'fulfilled'), 'rejected'],
    );
    assert.match(String((tries.at(-1) as PromiseRejectedResult).reason), /403|inactive/i);
    // Skipping negotiate, the WebSocket's own access check refuses it too.
    await assert.rejects(connectClient(m.url, inactive.token, { skipNegotiation: true }));
  });

  test('a user removed from a chat stops receiving it on the live connection and after reconnecting', async () => {
    const m = await messengerApp({}, { rateLimitChatChangesPerMinute: 0 });
    const [owner, stays, leaves] = await Promise.all([m.user(), m.user(), m.user()]);
    const chatId = await groupChat(m, owner.token, [stays.id, leaves.id]);
    await m.dispatch();
    const [s, l] = await Promise.all([m.connect(stays.token, ['probe']), m.connect(leaves.token, ['probe'])]);

    assert.equal((await m.call(owner.token, 'DELETE', `/api/messenger/chats/${chatId}/participants/${leaves.id}`)).status, 204);
    await m.dispatch();
    await m.app.platform.hub.send(chatGroup(chatId), 'probe', { chat: 1 });
    await waitFor('the remaining member got the frame', () => probes(s).length === 1);

    await l.connection.stop();
    const again = await m.connect(leaves.token, ['probe']);
    await m.app.platform.hub.send(chatGroup(chatId), 'probe', { chat: 2 });
    await waitFor('the remaining member got the second frame', () => probes(s).length === 2);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(probes(l), [], 'not on the live connection');
    assert.deepEqual(probes(again), [], 'not after reconnecting');
  });
});
