import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * list-messages both ways: afterSeq pages forward (the refill), beforeSeq pages back through older
 * history — the newest page below it, handed back in ascending Seq order like a forward page.
 */

type Page = { items: { seq: number; body: string | null; deleted: boolean }[]; lastSeq: number; hasMore: boolean };
type Err = { code: string; message: string };

async function chatWith(m: MessengerApp, n: number) {
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
  for (let i = 1; i <= n; i++) await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: `m${i}` });
  return { alice, bob, url: `/api/messenger/chats/${chat.id}/messages` };
}

describe('list-messages: beforeSeq pages back through history', () => {
  test('beforeSeq answers the newest page below it in ascending order; following the first Seq pages back to the start', async () => {
    const m = await messengerApp();
    const { bob, url } = await chatWith(m, 7);
    const latest = await m.call<Page>(bob.token, 'GET', `${url}?beforeSeq=8&limit=3`);
    assert.equal(latest.status, 200);
    assert.deepEqual(latest.body.items.map((x) => x.seq), [5, 6, 7]);
    assert.equal(latest.body.lastSeq, 7);
    const older = await m.call<Page>(bob.token, 'GET', `${url}?beforeSeq=5&limit=3`);
    assert.deepEqual(older.body.items.map((x) => x.body), ['m2', 'm3', 'm4']);
    const first = await m.call<Page>(bob.token, 'GET', `${url}?beforeSeq=2&limit=3`);
    assert.deepEqual(first.body.items.map((x) => x.seq), [1], 'a short page: the start of the chat');
    const none = await m.call<Page>(bob.token, 'GET', `${url}?beforeSeq=1`);
    assert.deepEqual(none.body.items, []);
  });

  test('hasMore says whether a page has a neighbour in its direction, false on an exactly full first or last page', async () => {
    const m = await messengerApp();
    const { bob, url } = await chatWith(m, 4);
    const page = async (query: string) => {
      const res = await m.call<Page>(bob.token, 'GET', `${url}?${query}`);
      return [res.body.items.map((x) => x.seq), res.body.hasMore];
    };
    assert.deepEqual(await page('beforeSeq=5&limit=2'), [[3, 4], true]);
    assert.deepEqual(await page('beforeSeq=3&limit=2'), [[1, 2], false]);
    assert.deepEqual(await page('afterSeq=0&limit=3'), [[1, 2, 3], true]);
    assert.deepEqual(await page('afterSeq=2&limit=2'), [[3, 4], false]);
  });

  test('a deleted message stays in a back page as a tombstone (its Seq, no body)', async () => {
    const m = await messengerApp();
    const { alice, bob, url } = await chatWith(m, 3);
    const second = (await m.call<Page>(alice.token, 'GET', `${url}?afterSeq=1&limit=1`)).body.items[0] as unknown as { id: string };
    assert.equal((await m.call(alice.token, 'DELETE', `${url}/${second.id}`)).status, 204);
    const page = await m.call<Page>(bob.token, 'GET', `${url}?beforeSeq=4`);
    assert.deepEqual(page.body.items.map((x) => [x.seq, x.body, x.deleted]), [[1, 'm1', false], [2, null, true], [3, 'm3', false]]);
  });

  test('afterSeq with beforeSeq is 400 VALIDATION_FAILED naming both', async () => {
    const m = await messengerApp();
    const { bob, url } = await chatWith(m, 1);
    const res = await m.call<Err>(bob.token, 'GET', `${url}?afterSeq=0&beforeSeq=5`);
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'VALIDATION_FAILED');
    assert.match(res.body.message, /afterSeq/);
    assert.match(res.body.message, /beforeSeq/);
  });

  test('without either, the first page from Seq 1 as before (afterSeq defaults to 0)', async () => {
    const m = await messengerApp();
    const { bob, url } = await chatWith(m, 3);
    const res = await m.call<Page>(bob.token, 'GET', `${url}?limit=2`);
    assert.deepEqual(res.body.items.map((x) => x.seq), [1, 2]);
  });

  test('beforeSeq of a chat the caller is not in is 404 MSG_CHAT_NOT_FOUND', async () => {
    const m = await messengerApp();
    const { url } = await chatWith(m, 2);
    const stranger = await m.user();
    const res = await m.call<Err>(stranger.token, 'GET', `${url}?beforeSeq=3`);
    assert.deepEqual([res.status, res.body.code], [404, 'MSG_CHAT_NOT_FOUND']);
  });
});
