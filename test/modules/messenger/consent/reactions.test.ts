import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { ALL_EVENTS, messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * Reactions follow read receipts (docs/security.md, "Consent"): what a user does in a chat they have
 * not accepted, or across a block in a Direct chat, is not shared — their reaction counts for
 * themselves only and its frame goes to their own devices only. Judged when read: accepting shares
 * them, a block takes them back at once (either way round), an unblock gives them back; a reaction
 * on a message withheld from the other member never reaches them.
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
type Reaction = { emoji: string; count: number; mine: boolean };
type Payload = Record<string, unknown>;
const reactions = (p: Payload[]) => p.map((f) => [f.UserId, f.Emoji, f.Count]);
const framesOf = (c: TestClient) => c.received.filter((r) => r.event === 'reaction_changed').map((r) => r.payload as Payload);

const react = (m: MessengerApp, u: User, chatId: string, messageId: string, emoji: string) =>
  m.call<{ reactions: Reaction[]; code?: string }>(u.token, 'PUT', `/api/messenger/chats/${chatId}/messages/${messageId}/reactions/${encodeURIComponent(emoji)}`);
const seen = async (m: MessengerApp, u: User, chatId: string) =>
  (await m.call<{ items: { id: string; reactions: Reaction[] }[] }>(u.token, 'GET', `/api/messenger/chats/${chatId}/messages`)).body.items.map((x) => x.reactions);
const send = async (m: MessengerApp, u: User, chatId: string, body: string) =>
  (await m.call<{ id: string }>(u.token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body })).body.id;
const direct = async (m: MessengerApp, from: User, to: User) =>
  (await m.call<{ id: string }>(from.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [to.id] })).body.id;

describe('reactions and consent', () => {
  test('in a message request the addressee’s reaction stays on their own devices until they accept the chat', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chatId = await direct(m, alice, bob);
    const messageId = await send(m, alice, chatId, 'hi, do you know me?');
    const [ca, cb] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(bob.token, ALL_EVENTS)];
    const mine = await react(m, bob, chatId, messageId, '👍');
    assert.deepEqual(mine.body.reactions, [{ emoji: '👍', count: 1, mine: true }], 'the reactor sees their own');
    assert.deepEqual(await seen(m, alice, chatId), [[]], 'the sender does not');
    // The fence: alice's own reaction, shared with the chat, reaches both after bob's was dispatched.
    await react(m, alice, chatId, messageId, '🎉');
    await m.dispatch();
    await waitFor('both frames at bob', () => framesOf(cb).length === 2);
    await waitFor("alice's own frame at alice", () => framesOf(ca).length === 1);
    assert.deepEqual(reactions(framesOf(ca)), [[alice.id, '🎉', 1]], "bob's reaction never reached alice");
    assert.deepEqual(reactions(framesOf(cb)), [[bob.id, '👍', 1], [alice.id, '🎉', 1]]);
    await m.accept(bob.token, chatId);
    assert.deepEqual(await seen(m, alice, chatId), [[{ emoji: '🎉', count: 1, mine: true }, { emoji: '👍', count: 1, mine: false }]], 'accepting shares it');
    await Promise.all([ca.connection.stop(), cb.connection.stop()]);
  });

  test('a block in a Direct chat hides reactions both ways at once and keeps new ones on the reactor’s devices; an unblock gives them back', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chatId = await direct(m, alice, bob);
    await m.accept(bob.token, chatId);
    const messageId = await send(m, alice, chatId, 'before the block');
    await react(m, bob, chatId, messageId, '👍');
    await react(m, alice, chatId, messageId, '❤️');
    assert.deepEqual((await seen(m, alice, chatId))[0]!.map((r) => r.emoji).sort(), ['❤️', '👍'].sort());
    assert.equal((await m.call(alice.token, 'PUT', `/api/messenger/blacklist/${bob.id}`)).status, 200);
    assert.deepEqual(await seen(m, alice, chatId), [[{ emoji: '❤️', count: 1, mine: true }]], "bob's is hidden from alice");
    assert.deepEqual(await seen(m, bob, chatId), [[{ emoji: '👍', count: 1, mine: true }]], "and alice's from bob");
    await m.dispatch(); // what was before the block, out of the way
    const [ca, cb] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(bob.token, ALL_EVENTS)];
    assert.equal((await react(m, bob, chatId, messageId, '😢')).status, 200, 'the blocked are never told');
    await react(m, alice, chatId, messageId, '🙈');
    await m.dispatch();
    await waitFor('each own frame', () => framesOf(ca).length === 1 && framesOf(cb).length === 1);
    assert.deepEqual([reactions(framesOf(ca)), reactions(framesOf(cb))], [[[alice.id, '🙈', 1]], [[bob.id, '😢', 1]]]);
    const rows = await m.pool.query<{ target_kind: string; target_user_id: string }>(
      `select target_kind, target_user_id from push.realtime_outbox where kind = 'ReactionChanged' order by id desc limit 2`,
    );
    assert.deepEqual(rows.rows.map((r) => r.target_kind), ['User', 'User'], 'pushed to the reactors’ own user groups');
    assert.equal((await m.call(alice.token, 'DELETE', `/api/messenger/blacklist/${bob.id}`)).status, 200);
    assert.deepEqual((await seen(m, alice, chatId))[0]!.map((r) => r.emoji).sort(), ['❤️', '👍', '😢', '🙈'].sort(), 'an unblock gives them back');
    await Promise.all([ca.connection.stop(), cb.connection.stop()]);
  });

  test('a reaction on a message withheld from the blocker goes only to the reactor, also after an unblock', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chatId = await direct(m, alice, bob);
    await m.accept(bob.token, chatId);
    await m.call(alice.token, 'PUT', `/api/messenger/blacklist/${bob.id}`);
    const hidden = await send(m, bob, chatId, 'withheld from alice');
    await m.call(alice.token, 'DELETE', `/api/messenger/blacklist/${bob.id}`);
    assert.equal((await react(m, bob, chatId, hidden, '👍')).status, 200);
    const refused = await react(m, alice, chatId, hidden, '👍');
    assert.deepEqual([refused.status, refused.body.code], [404, 'MSG_MESSAGE_NOT_FOUND'], 'it does not exist for alice');
    const { rows } = await m.pool.query<{ target_kind: string }>(`select target_kind from push.realtime_outbox where kind = 'ReactionChanged'`);
    assert.deepEqual(rows.map((r) => r.target_kind), ['User']);
  });
});
