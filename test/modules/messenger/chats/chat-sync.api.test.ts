import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { REALTIME_RETENTION_JOB } from '../../../../src/platform/push/retention.job.ts';
import { messengerApp, type MessengerApp } from '../support/app.ts';
import { PUSH_DEFAULTS } from '../../../../src/platform/push/index.ts';

/**
 * Chat-list sync: GET /api/messenger/chats lists the caller's chats with unreadCount and a sync
 * token; with after=<token> it answers only the chats changed since (new messages, renames,
 * membership, read marks), and the ids of chats the caller left or was removed from.
 */

type Chat = { id: string; title: string | null; lastSeq: number; unreadCount: number };
type Page = { items: Chat[]; removed: string[]; next: string };
type Err = { code: string };

async function page(m: MessengerApp, token: string, after?: string, limit = 50): Promise<Page> {
  const res = await m.call<Page>(token, 'GET', `/api/messenger/chats?limit=${limit}${after ? `&after=${after}` : ''}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** Every change after the token, following next until nothing is left. */
async function changedSince(m: MessengerApp, token: string, after: string, limit = 50): Promise<{ items: Chat[]; removed: string[]; next: string }> {
  const items: Chat[] = [];
  const removed: string[] = [];
  for (let cursor = after; ; ) {
    const p = await page(m, token, cursor, limit);
    items.push(...p.items);
    removed.push(...p.removed);
    if (p.items.length + p.removed.length === 0) return { items, removed, next: cursor };
    cursor = p.next;
  }
}

async function groupOf(m: MessengerApp, owner: { token: string }, members: { id: string }[], title: string): Promise<string> {
  const res = await m.call<{ id: string }>(owner.token, 'POST', '/api/messenger/chats', { kind: 'Group', title, memberUserIds: members.map((u) => u.id) });
  assert.equal(res.status, 201);
  return res.body.id;
}

describe('chat-list sync (GET /api/messenger/chats?after=)', () => {
  test('the list carries unreadCount (others’ messages after my last read, deleted ones excluded) and a sync token', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = await groupOf(m, alice, [bob], 'T');
    const base = `/api/messenger/chats/${chat}`;
    for (const body of ['1', '2', '3']) await m.call(alice.token, 'POST', `${base}/messages`, { kind: 'Text', body });
    await m.call(bob.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'mine' });
    const third = (await m.call<{ items: { id: string; seq: number }[] }>(bob.token, 'GET', `${base}/messages`)).body.items.find((x) => x.seq === 3)!;
    assert.equal((await m.call(alice.token, 'DELETE', `${base}/messages/${third.id}`)).status, 204);
    let list = await page(m, bob.token);
    assert.deepEqual(list.items.map((c) => [c.id, c.unreadCount]), [[chat, 2]], 'seq 1 and 2: seq 3 is deleted, seq 4 is mine');
    assert.match(list.next, /^e[0-9a-z]+$/);
    await m.call(bob.token, 'POST', `${base}/read`, { seq: 2 });
    list = await page(m, bob.token);
    assert.equal(list.items[0]!.unreadCount, 0);
    assert.equal((await page(m, alice.token)).items[0]!.unreadCount, 1, 'bob’s message is unread for alice');
  });

  test('after a token: only the chats with new messages, renames, membership changes or read marks, each once; removed chats as ids', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const quiet = await groupOf(m, alice, [bob], 'quiet');
    const talk = await groupOf(m, alice, [bob], 'talk');
    const renamed = await groupOf(m, alice, [bob], 'old name');
    const read = await groupOf(m, alice, [bob], 'read');
    const left = await groupOf(m, alice, [bob], 'left');
    const joined = await groupOf(m, alice, [carol], 'joined');
    await m.call(alice.token, 'POST', `/api/messenger/chats/${read}/messages`, { kind: 'Text', body: 'x' });
    await m.dispatch();
    const token = (await page(m, bob.token)).next;
    assert.deepEqual((await changedSince(m, bob.token, token)).items, [], 'nothing changed yet');

    for (const body of ['a', 'b']) await m.call(alice.token, 'POST', `/api/messenger/chats/${talk}/messages`, { kind: 'Text', body });
    await m.call(alice.token, 'PATCH', `/api/messenger/chats/${renamed}`, { title: 'new name' });
    await m.call(bob.token, 'POST', `/api/messenger/chats/${read}/read`, { seq: 1 });
    await m.call(bob.token, 'DELETE', `/api/messenger/chats/${left}/participants/${bob.id}`);
    await m.call(alice.token, 'POST', `/api/messenger/chats/${joined}/participants`, { userIds: [bob.id] });
    await m.dispatch();

    const changed = await changedSince(m, bob.token, token);
    assert.deepEqual(
      changed.items.map((c) => c.id).sort(),
      [talk, renamed, read, joined].sort(),
      'each changed chat once; the quiet one not at all',
    );
    assert.ok(!changed.items.some((c) => c.id === quiet));
    assert.deepEqual(changed.removed, [left]);
    const byId = new Map(changed.items.map((c) => [c.id, c]));
    assert.equal(byId.get(renamed)!.title, 'new name');
    assert.equal(byId.get(talk)!.unreadCount, 2);
    assert.equal(byId.get(read)!.unreadCount, 0);
    // Small pages walk the same changes.
    const paged = await changedSince(m, bob.token, token, 1);
    assert.deepEqual(paged.items.map((c) => c.id).sort(), [talk, renamed, read, joined].sort());
    assert.deepEqual(paged.removed, [left]);
    // From the last token nothing is left; a new change shows again.
    assert.deepEqual((await changedSince(m, bob.token, changed.next)).items, []);
    await m.call(alice.token, 'POST', `/api/messenger/chats/${quiet}/messages`, { kind: 'Text', body: 'wake' });
    await m.dispatch();
    assert.deepEqual((await changedSince(m, bob.token, changed.next)).items.map((c) => c.id), [quiet]);
  });

  test('a token past retention answers 410 MSG_EVENTS_CURSOR_EXPIRED; a malformed one 400', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = await groupOf(m, alice, [bob], 'T');
    await m.dispatch();
    const token = (await page(m, bob.token)).next;
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat}/messages`, { kind: 'Text', body: 'x' });
    await m.dispatch();
    m.clock.advance(PUSH_DEFAULTS.eventsRetentionMs + 3_600_000);
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat}/messages`, { kind: 'Text', body: 'y' });
    await m.dispatch();
    assert.equal((await m.app.platform.runner.runNow(REALTIME_RETENTION_JOB)).outcome, 'success');
    const expired = await m.call<Err>(bob.token, 'GET', `/api/messenger/chats?after=${token}`);
    assert.deepEqual([expired.status, expired.body.code], [410, 'MSG_EVENTS_CURSOR_EXPIRED']);
    const bad = await m.call<Err>(bob.token, 'GET', '/api/messenger/chats?after=nope');
    assert.deepEqual([bad.status, bad.body.code], [400, 'MSG_EVENTS_CURSOR_INVALID']);
  });

  test('a token past the stream’s head (never handed out) answers 400 MSG_CHAT_SYNC_TOKEN_AHEAD, not an empty page; the head itself answers 200', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    await groupOf(m, alice, [bob], 'T');
    await m.dispatch();
    const token = (await page(m, bob.token)).next;
    const atHead = await page(m, bob.token, token);
    assert.deepEqual([atHead.items, atHead.removed, atHead.next], [[], [], token]);
    for (const ahead of ['ezz', `e${(Number.parseInt(token.slice(1), 36) + 1).toString(36)}`]) {
      const res = await m.call<Err>(bob.token, 'GET', `/api/messenger/chats?after=${ahead}`);
      assert.deepEqual([res.status, res.body.code], [400, 'MSG_CHAT_SYNC_TOKEN_AHEAD'], ahead);
    }
  });
});
