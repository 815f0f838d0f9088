import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * Replies and mentions: a reply's parent must be a message of its chat the sender can
 * read, and its preview (as the parent is now) travels in history, search and the message frame;
 * mentions name Active members of a group chat, are stored and travel the same way; each member's
 * notification level of a chat is theirs to set and rides on every MessagePostedKafkaEvent.
 */

type Preview = { messageId: string; seq: number; senderUserId: string; kind: string; excerpt: string | null; deleted: boolean };
type Message = { id: string; seq: number; body: string | null; replyTo: Preview | null; mentionedUserIds: string[] };
type Err = { code: string };
type Payload = Record<string, unknown>;


async function groupOf(m: MessengerApp, n: number) {
  const users = [];
  for (let i = 0; i < n; i++) users.push(await m.user());
  const chat = (await m.call<{ id: string }>(users[0]!.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: users.slice(1).map((u) => u.id) })).body;
  for (const u of users.slice(1)) await m.accept(u.token, chat.id);
  return { users, chat, base: `/api/messenger/chats/${chat.id}` };
}

const messageCount = async (m: MessengerApp) => (await m.pool.query<{ n: number }>('select count(*)::int as n from messenger.messages')).rows[0]!.n;
const historyOf = async (m: MessengerApp, token: string, base: string) => (await m.call<{ items: Message[] }>(token, 'GET', `${base}/messages`)).body.items;

describe('replies', () => {
  test('a reply carries its parent’s preview in the answer, in history and in message_received; an edit of the parent shows in it', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const client = await m.connect(users[1]!.token, ALL_EVENTS);
    const long = `${'x'.repeat(99)}éyz`;
    const parent = (await m.call<Message>(users[1]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: long })).body;
    const reply = await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'yes', replyToMessageId: parent.id });
    assert.equal(reply.status, 201);
    const preview = { messageId: parent.id, seq: 1, senderUserId: users[1]!.id, kind: 'Text', excerpt: `${'x'.repeat(99)}é`, deleted: false };
    assert.deepEqual(reply.body.replyTo, preview, 'the first 100 characters');
    assert.deepEqual((await historyOf(m, users[1]!.token, base)).map((x) => x.replyTo), [null, preview]);
    await m.dispatch();
    await waitFor('both frames', () => ofEvent(client, 'message_received').length === 2);
    const frame = ofEvent(client, 'message_received').find((p) => p.MessageId === reply.body.id)!;
    assert.deepEqual(frame.ReplyTo, { MessageId: parent.id, Seq: 1, SenderUserId: users[1]!.id, Kind: 'Text', Excerpt: `${'x'.repeat(99)}é`, Deleted: false });

    assert.equal((await m.call(users[1]!.token, 'PATCH', `${base}/messages/${parent.id}`, { body: 'edited' })).status, 200);
    assert.equal((await historyOf(m, users[0]!.token, base))[1]!.replyTo?.excerpt, 'edited');
    const hits = (await m.call<{ items: { message: Message }[] }>(users[0]!.token, 'GET', '/api/messenger/messages/search?q=yes')).body.items;
    assert.equal(hits[0]?.message.replyTo?.excerpt, 'edited', 'search hits carry the same view');
  });

  test('a deleted parent is previewed as deleted, without its excerpt', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const parent = (await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'secret soon gone' })).body;
    await m.call(users[1]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'reply', replyToMessageId: parent.id });
    assert.equal((await m.call(users[0]!.token, 'DELETE', `${base}/messages/${parent.id}`)).status, 204);
    const reply = (await historyOf(m, users[1]!.token, base))[1]!;
    assert.deepEqual(reply.replyTo, { messageId: parent.id, seq: 1, senderUserId: users[0]!.id, kind: 'Text', excerpt: null, deleted: true });
  });

  test("a parent of another chat, or none at all, is refused 404 MSG_REPLY_PARENT_NOT_FOUND and nothing is stored", async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const other = await groupOf(m, 2);
    const foreign = (await m.call<Message>(other.users[0]!.token, 'POST', `${other.base}/messages`, { kind: 'Text', body: 'elsewhere' })).body;
    const before = await messageCount(m);
    for (const parent of [foreign.id, randomUUID()]) {
      const res = await m.call<Err>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', replyToMessageId: parent });
      assert.deepEqual([res.status, res.body.code], [404, 'MSG_REPLY_PARENT_NOT_FOUND']);
    }
    assert.equal(await messageCount(m), before);
    // A stranger to the chat learns nothing about its messages: the chat is what is not found.
    const stranger = await m.call<Err>(other.users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', replyToMessageId: foreign.id });
    assert.deepEqual([stranger.status, stranger.body.code], [404, 'MSG_CHAT_NOT_FOUND']);
  });

  test('a message withheld from the blocker is no parent for them, and a reply to it never shows them its text', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const base = `/api/messenger/chats/${(await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body.id}`;
    await m.accept(bob.token, base.split('/').pop()!);
    assert.equal((await m.call(alice.token, 'PUT', `/api/messenger/blacklist/${bob.id}`)).status, 200);
    const hidden = (await m.call<Message>(bob.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'withheld words' })).body;
    const refused = await m.call<Err>(alice.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'what?', replyToMessageId: hidden.id });
    assert.deepEqual([refused.status, refused.body.code], [404, 'MSG_REPLY_PARENT_NOT_FOUND']);
    assert.equal((await m.call(alice.token, 'DELETE', `/api/messenger/blacklist/${bob.id}`)).status, 200);
    const reply = await m.call<Message>(bob.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'as I said', replyToMessageId: hidden.id });
    assert.equal(reply.status, 201);
    const seen = (await historyOf(m, alice.token, base)).find((x) => x.id === reply.body.id)!;
    assert.deepEqual(seen.replyTo, { messageId: hidden.id, seq: hidden.seq, senderUserId: bob.id, kind: 'Text', excerpt: null, deleted: false });
  });

  test('a repeat of a clientMessageId with another parent or other mentions is 409 MSG_CLIENT_MESSAGE_ID_REUSED; the same ones answer the stored message', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 3);
    const [p1, p2] = [
      (await m.call<Message>(users[1]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'one' })).body,
      (await m.call<Message>(users[1]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'two' })).body,
    ];
    const clientMessageId = randomUUID();
    const send = (extra: object) => m.call<Message & Err>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', clientMessageId, ...extra });
    const first = await send({ replyToMessageId: p1.id, mentionedUserIds: [users[2]!.id, users[1]!.id] });
    assert.equal(first.status, 201);
    assert.deepEqual(first.body.mentionedUserIds, [users[1]!.id, users[2]!.id].sort(), 'stored sorted');
    const same = await send({ replyToMessageId: p1.id, mentionedUserIds: [users[1]!.id, users[2]!.id] });
    assert.deepEqual([same.status, same.body.id], [200, first.body.id], 'the same mentions in another order are the same message');
    for (const extra of [{ replyToMessageId: p2.id, mentionedUserIds: [users[1]!.id, users[2]!.id] }, { replyToMessageId: p1.id }, { mentionedUserIds: [users[1]!.id, users[2]!.id] }]) {
      const res = await send(extra);
      assert.deepEqual([res.status, res.body.code], [409, 'MSG_CLIENT_MESSAGE_ID_REUSED'], JSON.stringify(extra));
    }
  });
});

describe('mentions and notification levels', () => {
  test('mentions of members are stored and travel in history and message_received; the event carries them with the levels', async () => {
    const m = await messengerApp();
    const { users, chat, base } = await groupOf(m, 3);
    const client = await m.connect(users[1]!.token, ALL_EVENTS);
    const level = await m.call<{ notificationLevel: string }>(users[2]!.token, 'PUT', `${base}/notifications`, { level: 'mentions' });
    assert.deepEqual([level.status, level.body.notificationLevel], [200, 'mentions']);
    assert.equal((await m.call(users[1]!.token, 'PUT', `${base}/notifications`, { level: 'off' })).status, 200);
    const sent = await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hey', mentionedUserIds: [users[2]!.id] });
    assert.deepEqual([sent.status, sent.body.mentionedUserIds], [201, [users[2]!.id]]);
    assert.deepEqual((await historyOf(m, users[1]!.token, base))[0]!.mentionedUserIds, [users[2]!.id]);
    await m.dispatch();
    await waitFor('message_received', () => ofEvent(client, 'message_received').length === 1);
    assert.deepEqual(ofEvent(client, 'message_received')[0]!.MentionedUserIds, [users[2]!.id]);
    const { rows: [event] } = await m.pool.query<{ payload: Payload }>(`select payload from platform.outbox where payload->>'MessageId' = $1`, [sent.body.id]);
    assert.deepEqual(
      [event!.payload.MentionedUserIds, event!.payload.MutedUserIds, event!.payload.MentionsOnlyUserIds],
      [[users[2]!.id], [users[1]!.id], [users[2]!.id]],
    );
    assert.equal((await m.call<{ notificationLevel: string }>(users[0]!.token, 'GET', `/api/messenger/chats/${chat.id}`)).body.notificationLevel, 'all', 'the default; each sees only their own');
  });

  test('a mention of a non-member is 422 MSG_MENTION_NOT_MEMBER, any mention in a direct chat 422 MSG_MENTIONS_GROUP_ONLY; nothing is stored', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const outsider = await m.user();
    const direct = (await m.call<{ id: string }>(users[0]!.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [users[1]!.id] })).body;
    const before = await messageCount(m);
    const notMember = await m.call<Err>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', mentionedUserIds: [users[1]!.id, outsider.id] });
    assert.deepEqual([notMember.status, notMember.body.code], [422, 'MSG_MENTION_NOT_MEMBER']);
    const inDirect = await m.call<Err>(users[0]!.token, 'POST', `/api/messenger/chats/${direct.id}/messages`, { kind: 'Text', body: 'hi', mentionedUserIds: [users[1]!.id] });
    assert.deepEqual([inDirect.status, inDirect.body.code], [422, 'MSG_MENTIONS_GROUP_ONLY']);
    const repeated = await m.call<Err>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', mentionedUserIds: [users[1]!.id, users[1]!.id] });
    assert.equal(repeated.status, 400, 'each user once');
    assert.equal(await messageCount(m), before);
  });

  test('the notification level is the caller’s own: a non-member gets 404 MSG_CHAT_NOT_FOUND, an unknown level 400, and nothing changes', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const outsider = await m.user();
    const res = await m.call<Err>(outsider.token, 'PUT', `${base}/notifications`, { level: 'off' });
    assert.deepEqual([res.status, res.body.code], [404, 'MSG_CHAT_NOT_FOUND']);
    assert.equal((await m.call(users[0]!.token, 'PUT', `${base}/notifications`, { level: 'loud' })).status, 400);
    const { rows } = await m.pool.query<{ level: string }>(`select distinct notification_level as level from messenger.chat_participants`);
    assert.deepEqual(rows.map((r) => r.level), ['all']);
  });
});
