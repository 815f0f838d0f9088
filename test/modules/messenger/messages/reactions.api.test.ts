import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * Reactions (messages/reactions.ts): add and take back one emoji on a message, idempotently; history
 * and search carry each message's counts and the caller's own; a change is pushed as reaction_changed
 * through the durable outbox (live frame and event stream); refusals change nothing.
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
type Reaction = { emoji: string; count: number; mine: boolean };
type Message = { id: string; seq: number; reactions: Reaction[] };
type Reply = { messageId: string; reactions: Reaction[]; code?: string };
type Payload = Record<string, unknown>;


/** Alice's group with bob and carol, all accepted, and alice's first message in it. */
async function group(m: MessengerApp) {
  const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
  const chatId = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id, carol.id] })).body.id;
  for (const u of [bob, carol]) await m.accept(u.token, chatId);
  const message = (await m.call<Message>(alice.token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body: 'hello there' })).body;
  return { alice, bob, carol, chatId, messageId: message.id };
}

const path = (chatId: string, messageId: string, emoji: string) => `/api/messenger/chats/${chatId}/messages/${messageId}/reactions/${encodeURIComponent(emoji)}`;
const react = (m: MessengerApp, u: User, chatId: string, messageId: string, emoji: string) => m.call<Reply>(u.token, 'PUT', path(chatId, messageId, emoji));
const unreact = (m: MessengerApp, u: User, chatId: string, messageId: string, emoji: string) => m.call<Reply>(u.token, 'DELETE', path(chatId, messageId, emoji));
const historyOf = async (m: MessengerApp, u: User, chatId: string) =>
  (await m.call<{ items: Message[] }>(u.token, 'GET', `/api/messenger/chats/${chatId}/messages`)).body.items;
const storedRows = async (m: MessengerApp) =>
  (await m.pool.query<{ emoji: string; live: boolean }>(`select emoji, removed_at is null as live from messenger.message_reactions order by emoji`)).rows;
const pushRows = async (m: MessengerApp) =>
  Number((await m.pool.query<{ n: string }>(`select count(*) as n from push.realtime_outbox where kind = 'ReactionChanged'`)).rows[0]!.n);

describe('reactions on messages', () => {
  test('adding twice and taking back twice are idempotent: one row, one push intent per change', async () => {
    const m = await messengerApp();
    const { bob, chatId, messageId } = await group(m);
    const first = await react(m, bob, chatId, messageId, '👍');
    assert.deepEqual([first.status, first.body], [200, { messageId, reactions: [{ emoji: '👍', count: 1, mine: true }] }]);
    const again = await react(m, bob, chatId, messageId, '👍');
    assert.deepEqual([again.status, again.body], [200, first.body], 'a repeat answers the same');
    assert.deepEqual(await storedRows(m), [{ emoji: '👍', live: true }]);
    assert.equal(await pushRows(m), 1, 'the repeat wrote no push intent');
    const gone = await unreact(m, bob, chatId, messageId, '👍');
    assert.deepEqual([gone.status, gone.body], [200, { messageId, reactions: [] }]);
    assert.deepEqual([(await unreact(m, bob, chatId, messageId, '👍')).status, await pushRows(m)], [200, 2], 'a second removal changes nothing');
    assert.deepEqual(await storedRows(m), [{ emoji: '👍', live: false }]);
    assert.deepEqual((await react(m, bob, chatId, messageId, '👍')).body.reactions, [{ emoji: '👍', count: 1, mine: true }], 'given again after a removal');
  });

  test('history and search carry per-emoji counts and the caller’s own, most first; ❤ and ❤️ are one reaction', async () => {
    const m = await messengerApp();
    const { alice, bob, carol, chatId, messageId } = await group(m);
    await react(m, bob, chatId, messageId, '👍');
    await react(m, carol, chatId, messageId, '👍');
    await react(m, bob, chatId, messageId, '❤');
    await react(m, alice, chatId, messageId, '❤️');
    await react(m, carol, chatId, messageId, '🎉');
    const expectFor = (u: User) => [
      { emoji: '❤️', count: 2, mine: u === bob || u === alice },
      { emoji: '👍', count: 2, mine: u === bob || u === carol },
      { emoji: '🎉', count: 1, mine: u === carol },
    ].sort((a, b) => b.count - a.count || (a.emoji < b.emoji ? -1 : 1));
    for (const u of [alice, bob, carol]) assert.deepEqual((await historyOf(m, u, chatId)).find((x) => x.id === messageId)!.reactions, expectFor(u));
    const hits = (await m.call<{ items: { message: Message }[] }>(bob.token, 'GET', `/api/messenger/messages/search?q=hello`)).body.items;
    assert.deepEqual(hits.map((h) => h.message.reactions), [expectFor(bob)], 'a search hit is the same view');
    const edited = await m.call<Message>(alice.token, 'PATCH', `/api/messenger/chats/${chatId}/messages/${messageId}`, { body: 'hello again' });
    assert.deepEqual([edited.status, edited.body.reactions], [200, expectFor(alice)], "an edit's answer carries them too");
    await m.call(alice.token, 'DELETE', `/api/messenger/chats/${chatId}/messages/${messageId}`);
    assert.deepEqual((await historyOf(m, bob, chatId))[0]!.reactions, [], 'a tombstone shows none');
    const late = await react(m, bob, chatId, messageId, '👀');
    assert.deepEqual([late.status, late.body.code], [409, 'MSG_MESSAGE_DELETED']);
  });

  test('a change reaches the other members as reaction_changed with the reactor, and stays in the event stream', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId, messageId } = await group(m);
    const [ca, cb] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(bob.token, ALL_EVENTS)];
    const from = (await m.call<{ next: string }>(alice.token, 'GET', '/api/events')).body.next;
    await react(m, bob, chatId, messageId, '🔥');
    await m.dispatch();
    await waitFor('the reaction frame at alice', () => ofEvent(ca, 'reaction_changed').length === 1);
    const { Cursor, ...frame } = ofEvent(ca, 'reaction_changed')[0]!;
    assert.ok(typeof Cursor === 'string');
    assert.deepEqual(frame, { ChatId: chatId, MessageId: messageId, UserId: bob.id, Emoji: '🔥', Added: true, Count: 1 });
    await waitFor("the same frame on bob's own device", () => ofEvent(cb, 'reaction_changed').length === 1);
    await unreact(m, bob, chatId, messageId, '🔥');
    await m.dispatch();
    await waitFor('the removal frame', () => ofEvent(ca, 'reaction_changed').length === 2);
    assert.deepEqual([ofEvent(ca, 'reaction_changed')[1]!.Added, ofEvent(ca, 'reaction_changed')[1]!.Count], [false, 0]);
    const stream = (await m.call<{ events: { name: string; payload: Payload }[] }>(alice.token, 'GET', `/api/events?after=${from}`)).body.events;
    assert.deepEqual(stream.filter((e) => e.name === 'reaction_changed').map((e) => [e.payload.UserId, e.payload.Emoji]), [[bob.id, '🔥'], [bob.id, '🔥']], 'a client resuming from a cursor gets them');
    await Promise.all([ca.connection.stop(), cb.connection.stop()]);
  });

  test('a stranger, an unknown message and a bad emoji are refused with stable codes and store nothing', async () => {
    const m = await messengerApp();
    const { bob, chatId, messageId } = await group(m);
    const stranger = await m.user();
    const refused = async (u: User, mid: string, emoji: string) => {
      const r = await react(m, u, chatId, mid, emoji);
      return [r.status, r.body.code];
    };
    assert.deepEqual(await refused(stranger, messageId, '👍'), [404, 'MSG_CHAT_NOT_FOUND']);
    assert.deepEqual(await refused(bob, crypto.randomUUID(), '👍'), [404, 'MSG_MESSAGE_NOT_FOUND']);
    for (const bad of ['a', '👍👍', '<b>', '1', ':+1:', ' 👍', '\u200d', '👍'.repeat(16)]) {
      assert.deepEqual(await refused(bob, messageId, bad), [400, 'MSG_REACTION_INVALID'], JSON.stringify(bad));
    }
    assert.deepEqual(await refused(bob, messageId, 'x'.repeat(17)), [400, 'VALIDATION_FAILED'], 'past the longest emoji, by the route schema');
    assert.equal((await m.call<{ code: string }>(bob.token, 'DELETE', path(chatId, messageId, 'nope'))).body.code, 'MSG_REACTION_INVALID');
    assert.deepEqual([await storedRows(m), await pushRows(m)], [[], 0]);
    for (const fine of ['👍🏽', '🇷🇺', '1️⃣', '👩🏻‍❤️‍💋‍👨🏼', '🏴󠁧󠁢󠁥󠁮󠁧󠁿']) assert.equal((await react(m, bob, chatId, messageId, fine)).status, 200, fine);
  });

  test('reactions count against the per-minute budget of chat writes: past it 429 RATE_LIMITED, nothing stored', async () => {
    const m = await messengerApp({ MESSENGER_RATE_LIMIT_MESSAGE_SENDS_PER_MINUTE: '2' });
    const { bob, chatId, messageId } = await group(m);
    assert.deepEqual([(await react(m, bob, chatId, messageId, '👍')).status, (await react(m, bob, chatId, messageId, '👀')).status], [200, 200]);
    const over = await react(m, bob, chatId, messageId, '🎉');
    assert.deepEqual([over.status, over.body.code], [429, 'RATE_LIMITED']);
    assert.deepEqual((await storedRows(m)).map((r) => r.emoji).sort(), ['👀', '👍'].sort());
  });

  test(`at most 20 different reactions of one user on a message: the 21st is 409 and stores nothing`, async () => {
    const m = await messengerApp();
    const { bob, carol, chatId, messageId } = await group(m);
    const emoji = [...'😀😁😂🤣😃😄😅😆😉😊😋😎😍😘🥰😗😙😚🙂🤗🤩'];
    for (const e of emoji.slice(0, 20)) assert.equal((await react(m, bob, chatId, messageId, e)).status, 200);
    const over = await react(m, bob, chatId, messageId, emoji[20]!);
    assert.deepEqual([over.status, over.body.code], [409, 'MSG_REACTION_LIMIT_REACHED']);
    assert.equal((await react(m, bob, chatId, messageId, emoji[0]!)).status, 200, 'one already given is still a no-op');
    assert.equal((await react(m, carol, chatId, messageId, emoji[20]!)).status, 200, 'the limit is per user');
    await unreact(m, bob, chatId, messageId, emoji[0]!);
    assert.equal((await react(m, bob, chatId, messageId, emoji[20]!)).status, 200, 'a removal makes room');
    assert.equal((await m.pool.query(`select 1 from messenger.message_reactions where user_id = $1 and removed_at is null`, [bob.id])).rowCount, 20);
  });
});
