import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { statementsMatching } from '../../../support/statements.ts';
import { messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * The chat list's lastMessage preview: the chat's last message (id, seq, sender, kind, sentAt), at
 * most 100 characters of a Text body, a deleted one marked deleted without its body, null for an
 * empty chat — read in the list's own statement, not one query per chat.
 */

type LastMessage = { id: string; seq: number; senderUserId: string; kind: string; preview: string | null; deleted: boolean; sentAt: string };
type Listed = { id: string; lastMessage: LastMessage | null };
type List = { items: Listed[]; next: string };

async function group(m: MessengerApp, token: string, memberId: string, title = 'T') {
  return (await m.call<{ id: string }>(token, 'POST', '/api/messenger/chats', { kind: 'Group', title, memberUserIds: [memberId] })).body.id;
}
const send = (m: MessengerApp, token: string, chatId: string, content: Record<string, unknown>) =>
  m.call<{ id: string; seq: number; sentAt: string }>(token, 'POST', `/api/messenger/chats/${chatId}/messages`, content);
const listOf = async (m: MessengerApp, token: string, query = '') => (await m.call<List>(token, 'GET', `/api/messenger/chats${query}`)).body;
const lastOf = (list: List, chatId: string) => list.items.find((c) => c.id === chatId)!.lastMessage;

/** How many statements `pool` runs while `during` runs (each still goes to the database). */
const statementCount = (pool: pg.Pool, during: () => Promise<unknown>) => statementsMatching(pool, /./, during);

describe('chat list: each chat with its last message', () => {
  test('the last message with a preview of at most 100 characters of its Text body; null for a chat without messages', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const empty = await group(m, alice.token, bob.id, 'empty');
    const talk = await group(m, alice.token, bob.id, 'talk');
    await send(m, alice.token, talk, { kind: 'Text', body: 'first' });
    // 120 code points, emoji among them: cut at 100 characters, never inside one.
    const long = '😀'.repeat(50) + 'x'.repeat(70);
    const last = (await send(m, bob.token, talk, { kind: 'Text', body: long })).body;
    const list = await listOf(m, alice.token);
    assert.equal(lastOf(list, empty), null);
    assert.deepEqual(lastOf(list, talk), {
      id: last.id,
      seq: 2,
      senderUserId: bob.id,
      kind: 'Text',
      preview: '😀'.repeat(50) + 'x'.repeat(50),
      deleted: false,
      sentAt: last.sentAt,
    });
  });

  test('a deleted last message is shown as deleted, without its body; a file or card has no preview', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const deleted = await group(m, alice.token, bob.id);
    const sent = (await send(m, alice.token, deleted, { kind: 'Text', body: 'oops' })).body;
    assert.equal((await m.call(alice.token, 'DELETE', `/api/messenger/chats/${deleted}/messages/${sent.id}`)).status, 204);
    const card = await group(m, alice.token, bob.id);
    await send(m, alice.token, card, { kind: 'Card', cardText: 'a card' });
    const list = await listOf(m, bob.token);
    assert.deepEqual([lastOf(list, deleted)?.id, lastOf(list, deleted)?.deleted, lastOf(list, deleted)?.preview], [sent.id, true, null]);
    assert.deepEqual([lastOf(list, card)?.kind, lastOf(list, card)?.preview], ['Card', null]);
  });

  test('a sync page (after=<token>) carries the new last message too', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = await group(m, alice.token, bob.id);
    const first = await listOf(m, bob.token);
    await send(m, alice.token, chat, { kind: 'Text', body: 'news' });
    await m.dispatch();
    const changed = await listOf(m, bob.token, `?after=${encodeURIComponent(first.next)}`);
    assert.equal(lastOf(changed, chat)?.preview, 'news');
  });

  test('no statement per chat: listing 12 chats with messages runs as many statements as listing 1', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const one = await m.user();
    await send(m, alice.token, await group(m, alice.token, one.id), { kind: 'Text', body: 'only' });
    for (let i = 0; i < 12; i++) await send(m, alice.token, await group(m, alice.token, bob.id), { kind: 'Text', body: `chat ${i}` });
    const oneToken = one.token;
    const forOne = await statementCount(m.pool, () => listOf(m, oneToken));
    const forTwelve = await statementCount(m.pool, async () => assert.equal((await listOf(m, bob.token)).items.length, 12));
    assert.ok(forOne > 0, 'the counter sees the list statements');
    assert.equal(forTwelve, forOne);
  });
});
