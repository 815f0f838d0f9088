import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * Message search (GET /api/messenger/messages/search): full text over the caller's chats, ranked and
 * paged, with highlights; never what was said before the caller joined, in a chat they left, withheld
 * from them or deleted; a stranger finds nothing.
 */

type Hit = { message: { id: string; chatId: string; seq: number; body: string | null }; rank: number; highlight: { text: string; match: boolean }[] };
type Page = { items: Hit[]; nextCursor: string | null };
type Err = { code: string; message: string };

const search = (m: MessengerApp, token: string, params: Record<string, string | number>) =>
  m.call<Page & Err>(token, 'GET', `/api/messenger/messages/search?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))}`);

async function group(m: MessengerApp, owner: { token: string }, members: { id: string }[]) {
  const res = await m.call<{ id: string }>(owner.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Дом', memberUserIds: members.map((u) => u.id) });
  assert.equal(res.status, 201);
  return res.body.id;
}

async function send(m: MessengerApp, token: string, chatId: string, body: string): Promise<string> {
  const res = await m.call<{ id: string }>(token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body });
  assert.equal(res.status, 201);
  return res.body.id;
}

describe('message search', () => {
  test('finds a word in any of its forms across the caller\'s chats, with the match highlighted', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const one = await group(m, alice, [bob]);
    const two = await group(m, alice, [carol]);
    await send(m, alice.token, one, 'Смотрели квартиру на Тверской вчера');
    await send(m, alice.token, two, 'Две квартиры свободны с понедельника');
    await send(m, alice.token, two, 'Ключи у консьержа');
    const res = await search(m, alice.token, { q: 'квартира' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.items.map((h) => h.message.chatId).sort(), [one, two].sort(), 'both forms found, in both chats');
    for (const hit of res.body.items) {
      const matched = hit.highlight.filter((p) => p.match).map((p) => p.text.toLowerCase());
      assert.ok(matched.some((w) => w.startsWith('квартир')), `the match is marked: ${JSON.stringify(hit.highlight)}`);
      assert.equal(hit.highlight.map((p) => p.text).join(''), hit.message.body, 'the pieces put together are the text');
    }
  });

  test('ranks the better match first: a message naming both words above one naming one', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = await group(m, alice, [bob]);
    const both = await send(m, alice.token, chat, 'balcony and parking included in the price');
    m.clock.advance(1000);
    await send(m, alice.token, chat, 'parking is extra');
    const res = await search(m, bob.token, { q: 'parking balcony or parking' });
    assert.equal(res.body.items[0]?.message.id, both);
  });

  test('pages by cursor: every hit once, in order, then nextCursor null', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = await group(m, alice, [bob]);
    const sent = new Set<string>();
    for (let i = 0; i < 7; i++) {
      sent.add(await send(m, alice.token, chat, `показ номер ${i}`));
      m.clock.advance(10);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { status: number; body: Page } = await search(m, bob.token, { q: 'показ', limit: 3, ...(cursor ? { cursor } : {}) });
      assert.equal(res.status, 200);
      seen.push(...res.body.items.map((h) => h.message.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(new Set(seen), sent);
    assert.equal(seen.length, sent.size, 'no hit twice');
  });

  test('within one chat only with chatId; a chat the caller is not in is 404 MSG_CHAT_NOT_FOUND', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const one = await group(m, alice, [bob]);
    const two = await group(m, alice, [carol]);
    await send(m, alice.token, one, 'ипотека одобрена');
    await send(m, alice.token, two, 'ипотека на рассмотрении');
    const inOne = await search(m, alice.token, { q: 'ипотека', chatId: one });
    assert.deepEqual(inOne.body.items.map((h) => h.message.chatId), [one]);
    const notMine = await search(m, bob.token, { q: 'ипотека', chatId: two });
    assert.deepEqual([notMine.status, notMine.body.code], [404, 'MSG_CHAT_NOT_FOUND']);
  });

  test('a stranger finds nothing', async () => {
    const m = await messengerApp();
    const [alice, bob, stranger] = [await m.user(), await m.user(), await m.user()];
    await send(m, alice.token, await group(m, alice, [bob]), 'секретный код домофона 1234');
    const res = await search(m, stranger.token, { q: 'домофона' });
    assert.deepEqual([res.status, res.body.items], [200, []]);
  });

  test('a member added later does not find what was said before they joined, only after', async () => {
    const m = await messengerApp();
    const [alice, bob, late] = [await m.user(), await m.user(), await m.user()];
    const chat = await group(m, alice, [bob]);
    await send(m, alice.token, chat, 'цена 10 миллионов до торга');
    m.clock.advance(60_000);
    assert.equal((await m.call(alice.token, 'POST', `/api/messenger/chats/${chat}/participants`, { userIds: [late.id] })).status, 200);
    m.clock.advance(1000);
    const after = await send(m, alice.token, chat, 'цена снижена');
    const res = await search(m, late.token, { q: 'цена' });
    assert.deepEqual(res.body.items.map((h) => h.message.id), [after]);
    assert.equal((await search(m, bob.token, { q: 'цена' })).body.items.length, 2, 'a member from the start finds both');
  });

  test('a member removed from the chat no longer finds its messages', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = await group(m, alice, [bob]);
    await send(m, alice.token, chat, 'задаток внесён');
    assert.equal((await search(m, bob.token, { q: 'задаток' })).body.items.length, 1);
    assert.equal((await m.call(alice.token, 'DELETE', `/api/messenger/chats/${chat}/participants/${bob.id}`)).status, 204);
    assert.deepEqual((await search(m, bob.token, { q: 'задаток' })).body.items, []);
  });

  test('a deleted message is not found', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = await group(m, alice, [bob]);
    const id = await send(m, alice.token, chat, 'перепутал адрес');
    assert.equal((await m.call(alice.token, 'DELETE', `/api/messenger/chats/${chat}/messages/${id}`)).status, 204);
    assert.deepEqual((await search(m, bob.token, { q: 'адрес' })).body.items, []);
  });

  test('a message withheld from a blocker is not found by them; its sender finds it', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    await m.contacts(alice, bob);
    const direct = await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] });
    assert.equal(direct.status, 201);
    assert.equal((await m.call(bob.token, 'PUT', `/api/messenger/blacklist/${alice.id}`)).status < 300, true);
    await send(m, alice.token, direct.body.id, 'перезвоните насчёт осмотра');
    assert.deepEqual((await search(m, bob.token, { q: 'осмотра' })).body.items, []);
    assert.equal((await search(m, alice.token, { q: 'осмотра' })).body.items.length, 1);
  });

  test('a text that forges the highlight marks cannot: the marks are removed before highlighting', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = await group(m, alice, [bob]);
    await send(m, alice.token, chat, 'счёт \uE000оплачен\uE001 полностью');
    const [hit] = (await search(m, bob.token, { q: 'полностью' })).body.items;
    assert.deepEqual(hit?.highlight.filter((p) => p.match).map((p) => p.text), ['полностью']);
  });

  test('bad input is 400 with a stable code: an empty or too long query, a forged cursor, a limit past 50', async () => {
    const m = await messengerApp();
    const alice = await m.user();
    for (const [params, code] of [
      [{ q: '' }, 'VALIDATION_FAILED'],
      [{ q: 'x'.repeat(201) }, 'VALIDATION_FAILED'],
      [{ q: 'дом', limit: 51 }, 'VALIDATION_FAILED'],
      [{ q: 'дом', cursor: 'bm90LWEtY3Vyc29y' }, 'MSG_SEARCH_CURSOR_INVALID'],
      [{ q: 'дом', cursor: Buffer.from(JSON.stringify([1, '1e400', 'x'])).toString('base64url') }, 'MSG_SEARCH_CURSOR_INVALID'],
    ] as const) {
      const res = await search(m, alice.token, params);
      assert.deepEqual([res.status, res.body.code], [400, code], JSON.stringify(params));
    }
  });

  test('a query of stop words or punctuation only finds nothing, without an error', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    await send(m, alice.token, await group(m, alice, [bob]), 'и в на the');
    for (const q of ['и', '!!!', '"', '-', 'or']) {
      const res = await search(m, bob.token, { q });
      assert.deepEqual([res.status, res.body.items], [200, []], q);
    }
  });
});
