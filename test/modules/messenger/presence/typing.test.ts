import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp, type MessengerApp } from '../support/app.ts';
import { connectClient, type TestClient } from '../../../support/signalr.ts';
import { statementsMatching } from '../../../support/statements.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * The hub method Typing(chatId), through the official SignalR client against the whole app: a
 * `typing` frame { ChatId, UserId } to the chat's other members only; refused with a completion
 * error for a non-member or a malformed id; throttled per connection and chat.
 */

const typings = (c: TestClient) => c.received.filter((r) => r.event === 'typing').map((r) => r.payload);

async function groupOf(m: MessengerApp, size: number) {
  const users = await Promise.all(Array.from({ length: size }, () => m.user()));
  const [owner, ...rest] = users;
  const chat = (await m.call<{ id: string }>(owner!.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: rest.map((u) => u.id) })).body;
  // Strangers join as a message request; each accepts, so its typing reaches the chat (docs/security.md, "Consent").
  for (const u of rest) await m.accept(u.token, chat.id);
  return { users, chat };
}

describe('hub method Typing', () => {
  test("a member's Typing reaches the chat's other members once, not the typist's own devices nor outsiders", async () => {
    const m = await messengerApp();
    const { users: [alice, bob, carol], chat } = await groupOf(m, 3);
    const outsider = await m.user();
    const [a1, a2, b, c, o] = await Promise.all([alice!, alice!, bob!, carol!, outsider].map((u) => m.connect(u.token, ['typing'])));
    await a1!.connection.invoke('Typing', chat.id);
    const frame = { ChatId: chat.id, UserId: alice!.id };
    await waitFor('bob and carol see alice typing', () => typings(b!).length === 1 && typings(c!).length === 1);
    assert.deepEqual(typings(b!), [frame]);
    assert.deepEqual(typings(c!), [frame]);
    // A later frame to everyone shows nothing else was on its way to the typist or the outsider.
    await b!.connection.invoke('Typing', chat.id);
    await waitFor('alice sees bob typing', () => typings(a1!).length === 1 && typings(a2!).length === 1);
    assert.deepEqual(typings(a1!), [{ ChatId: chat.id, UserId: bob!.id }], "alice's devices get only bob's typing");
    assert.deepEqual(typings(o!), [], 'an outsider gets nothing');
  });

  test('a non-member, a malformed id and a missing argument are refused with a completion error, and nothing is sent', async () => {
    const m = await messengerApp();
    const { users: [alice, bob], chat } = await groupOf(m, 2);
    const outsider = await m.user();
    const [b, o] = await Promise.all([bob!, outsider].map((u) => m.connect(u.token, ['typing'])));
    await assert.rejects(o!.connection.invoke('Typing', chat.id), /MSG_CHAT_NOT_FOUND:/);
    await assert.rejects(o!.connection.invoke('Typing', '00000000-0000-4000-8000-000000000000'), /MSG_CHAT_NOT_FOUND:/, 'an unknown chat reads as not a member');
    await assert.rejects(o!.connection.invoke('Typing', "1' or 1=1 --"), /\bVALIDATION_FAILED:/);
    await assert.rejects(o!.connection.invoke('Typing', { chatId: chat.id }), /\bVALIDATION_FAILED:/);
    await assert.rejects(o!.connection.invoke('Typing'), /\bVALIDATION_FAILED:/);
    assert.equal(o!.closed, false, 'a refused call leaves the connection open');
    const a = await m.connect(alice!.token, ['typing']);
    await a.connection.invoke('Typing', chat.id);
    await waitFor('the member call that follows arrives', () => typings(b!).length === 1);
    assert.deepEqual(typings(b!), [{ ChatId: chat.id, UserId: alice!.id }], 'only the member call reached bob');
  });

  test('calls of one connection for one chat are throttled; another connection or another chat is not held back', async () => {
    const m = await messengerApp();
    const { users: [alice, bob], chat } = await groupOf(m, 2);
    const other = (await m.call<{ id: string }>(alice!.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'U', memberUserIds: [bob!.id] })).body;
    const b = await m.connect(bob!.token, ['typing']);
    // The second connection speaks MessagePack: its call is answered with that protocol's completion.
    const [a1, a2] = [await m.connect(alice!.token, []), await connectClient(m.url, alice!.token, { protocol: 'messagepack' })];
    for (let i = 0; i < 5; i++) await a1.connection.invoke('Typing', chat.id); // answered, but one frame
    await a1.connection.invoke('Typing', other.id);
    await a2.connection.invoke('Typing', chat.id);
    await waitFor('three frames', () => typings(b).length >= 3);
    assert.deepEqual(typings(b), [
      { ChatId: chat.id, UserId: alice!.id },
      { ChatId: other.id, UserId: alice!.id },
      { ChatId: chat.id, UserId: alice!.id },
    ]);
  });

  test('calls within the throttle are answered from memory, a refusal as the first was: no statement reaches the database', async () => {
    const m = await messengerApp();
    const { users: [alice, bob], chat } = await groupOf(m, 2);
    const other = (await m.call<{ id: string }>(alice!.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'U', memberUserIds: [bob!.id] })).body;
    const outsider = await m.user();
    const [a, o] = [await m.connect(alice!.token, []), await m.connect(outsider.token, [])];
    await a.connection.invoke('Typing', chat.id);
    await assert.rejects(o.connection.invoke('Typing', chat.id), /MSG_CHAT_NOT_FOUND:/);
    const typingReads = /p\.accepted_at is not null/;
    const repeated = await statementsMatching(m.pool, typingReads, async () => {
      for (let i = 0; i < 5; i++) {
        await a.connection.invoke('Typing', chat.id);
        await assert.rejects(o.connection.invoke('Typing', chat.id), /MSG_CHAT_NOT_FOUND:/, 'the refusal is repeated from memory');
      }
    });
    assert.equal(repeated, 0, 'repeated calls ran no statement');
    const fresh = await statementsMatching(m.pool, typingReads, () => a.connection.invoke('Typing', other.id));
    assert.equal(fresh, 1, 'a call for another chat reads the database (the count sees the statement)');
  });

  test('a StreamInvocation of Typing is refused with a completion error and sends nothing', async () => {
    const m = await messengerApp();
    const { users: [alice, bob, carol], chat } = await groupOf(m, 3);
    const [a, b, c] = await Promise.all([alice!, bob!, carol!].map((u) => m.connect(u.token, ['typing'])));
    const error = await new Promise<Error>((resolve, reject) =>
      a!.connection.stream('Typing', chat.id).subscribe({ next: () => reject(new Error('an item')), complete: () => reject(new Error('completed')), error: resolve }),
    );
    assert.match(error.message, /non-streaming 'Typing' method with a streaming invocation/);
    // A later frame to bob shows nothing of alice's was on its way.
    await c!.connection.invoke('Typing', chat.id);
    await waitFor("bob sees carol's typing", () => typings(b!).length === 1);
    assert.deepEqual(typings(b!), [{ ChatId: chat.id, UserId: carol!.id }]);
  });
});
