import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import { statementsMatching } from '../../../support/statements.ts';
import { changedTables, storedDigests } from '../../../support/stored.ts';
import { messengerApp, type MessengerApp } from '../support/app.ts';

type Chat = { id: string; participants: { userId: string }[] };
type Err = { code: string; message: string };

const group = (m: MessengerApp, token: string, memberUserIds: string[]) =>
  m.call<Chat & Err>(token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'G', memberUserIds });
const add = (m: MessengerApp, token: string, chatId: string, userIds: string[]) =>
  m.call<Chat & Err>(token, 'POST', `/api/messenger/chats/${chatId}/participants`, { userIds });
const block = (m: MessengerApp, token: string, userId: string) => m.call(token, 'PUT', `/api/messenger/blacklist/${userId}`);

describe('blocked means blocked: a blacklisted pair cannot be put into a group by one of them', () => {
  test('a group with, or an add of, the one blocked is 403 MSG_USER_BLOCKED; of the one who blocks, 404 MSG_USER_NOT_FOUND as for nobody; nothing stored', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const before = (await group(m, alice.token, [bob.id, carol.id])).body; // a group from before the blocking
    const bobsGroup = (await group(m, bob.token, [carol.id])).body;
    const alicesGroup = (await group(m, alice.token, [carol.id])).body;
    assert.equal((await block(m, alice.token, bob.id)).status, 200);

    // The blocked are never told: to bob, alice is a user the messenger does not hold.
    const nobody = [404, 'MSG_USER_NOT_FOUND', `no active messenger user with id ${alice.id}`];
    const own = [403, 'MSG_USER_BLOCKED'];
    const attempts: [string, () => Promise<{ status: number; body: Err }>, unknown[]][] = [
      ['bob (blocked) creates a group with alice', () => group(m, bob.token, [alice.id, carol.id]), nobody],
      ['alice (who blocked) creates a group with bob', () => group(m, alice.token, [carol.id, bob.id]), own],
      ['bob adds alice to his group', () => add(m, bob.token, bobsGroup.id, [alice.id]), nobody],
      ['alice adds bob to her group', () => add(m, alice.token, alicesGroup.id, [carol.id, bob.id]), own],
    ];
    for (const [what, attempt, expected] of attempts) {
      const stored = await storedDigests(m.pool);
      const res = await attempt();
      assert.deepEqual([res.status, res.body.code, res.body.message].slice(0, expected.length), expected, what);
      assert.deepEqual(changedTables(stored, await storedDigests(m.pool)), [], `${what}: stored something`);
    }

    // Existing groups are left alone: both stay and may still write there.
    const send = (token: string) => m.call(token, 'POST', `/api/messenger/chats/${before.id}/messages`, { kind: 'Text', body: 'still here' });
    assert.equal((await send(bob.token)).status, 201);
    assert.equal((await send(alice.token)).status, 201);
    // A third member may still put both into a group, at creation or later.
    assert.equal((await group(m, carol.token, [alice.id, bob.id])).status, 201);
    const carols = (await group(m, carol.token, [alice.id])).body;
    const added = await add(m, carol.token, carols.id, [bob.id]);
    assert.equal(added.status, 200);
    assert.deepEqual(added.body.participants.map((p) => p.userId).sort(), [alice.id, bob.id, carol.id].sort());

    // Unblocked, the pair may group again.
    assert.equal((await m.call(alice.token, 'DELETE', `/api/messenger/blacklist/${bob.id}`)).status, 200);
    assert.equal((await add(m, bob.token, bobsGroup.id, [alice.id])).status, 200);
  });

  test('the blocked opens a Direct chat with the one who blocks them as with anyone (what they write there is withheld); the one who blocks is told their block', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    assert.equal((await block(m, alice.token, bob.id)).status, 200);
    const direct = (token: string, userId: string) => m.call<Chat & Err>(token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [userId] });
    const opened = await direct(bob.token, alice.id);
    assert.equal(opened.status, 201, 'the blocked are never told');
    assert.deepEqual(opened.body.participants.map((p) => p.userId).sort(), [alice.id, bob.id].sort());
    assert.deepEqual([(await direct(alice.token, bob.id)).status, (await direct(alice.token, bob.id)).body.code], [403, 'MSG_USER_BLOCKED']);
  });
});

describe('an inactive user cannot be put into a group (seed 002: IsActive false is not addressable)', () => {
  test('creating a group with, or adding, a blocked or archived user is 404 MSG_USER_NOT_FOUND (named by id) with nothing stored', async () => {
    const m = await messengerApp();
    const [alice, bob, carol, dave] = [await m.user(), await m.user(), await m.user(), await m.user()];
    const chat = (await group(m, alice.token, [carol.id])).body;
    await m.pool.query('update messenger.users set is_active = false where id = $1', [bob.id]);
    const attempts: [string, () => Promise<{ status: number; body: Err }>][] = [
      ['a new group with the inactive user among its members', () => group(m, alice.token, [carol.id, bob.id])],
      ['adding the inactive user to a group', () => add(m, alice.token, chat.id, [bob.id])],
      ['adding them together with an active user', () => add(m, alice.token, chat.id, [dave.id, bob.id])],
    ];
    for (const [what, attempt] of attempts) {
      const stored = await storedDigests(m.pool);
      const res = await attempt();
      assert.deepEqual([res.status, res.body.code], [404, 'MSG_USER_NOT_FOUND'], what);
      assert.deepEqual(changedTables(stored, await storedDigests(m.pool)), [], `${what}: stored something`);
    }
    const members = (await m.call<Chat>(alice.token, 'GET', `/api/messenger/chats/${chat.id}`)).body.participants.map((p) => p.userId);
    assert.deepEqual(members.sort(), [alice.id, carol.id].sort());

    // Active again (identity unblocked them): they may be added.
    await m.pool.query('update messenger.users set is_active = true where id = $1', [bob.id]);
    assert.equal((await add(m, alice.token, chat.id, [bob.id])).status, 200);
  });
});

describe('chats under hostile load', () => {
  test('GET /api/messenger/chats reads the page\'s participants in one statement, however many chats it holds', async () => {
    const m = await messengerApp({}, { rateLimitChatChangesPerMinute: 0 });
    const [alice, bob] = [await m.user(), await m.user()];
    const participantReads = async () => {
      let items: Chat[] = [];
      const n = await statementsMatching(m.pool, /messenger\.chat_participants/, async () => {
        const res = await m.call<{ items: Chat[] }>(alice.token, 'GET', '/api/messenger/chats?limit=200');
        assert.equal(res.status, 200);
        items = res.body.items;
      });
      return { n, items };
    };
    for (let i = 0; i < 2; i++) assert.equal((await group(m, alice.token, [bob.id])).status, 201);
    const few = await participantReads();
    for (let i = 0; i < 30; i++) assert.equal((await group(m, alice.token, [bob.id])).status, 201);
    const many = await participantReads();
    assert.equal(many.items.length, 32);
    assert.ok(many.items.every((c) => c.participants.length === 2), 'every chat of the page carries its participants');
    // The page's chats (joined with the caller's participation) and their participants: two statements.
    assert.deepEqual([few.n, many.n], [2, 2]);
  });

  test('adding participants: a stranger is refused before any user is looked up; the users are looked up in one statement', async () => {
    const m = await messengerApp();
    const [alice, bob, stranger] = [await m.user(), await m.user(), await m.user()];
    const chat = (await group(m, alice.token, [bob.id])).body;
    const others = await Promise.all(Array.from({ length: 20 }, () => m.user()));
    const lookups = /messenger\.blacklist_entries|from messenger\.users u where u\.id = any/;

    const perUser = /from messenger\.users where id = \$1/;
    let res: { status: number; body: Chat & Err } | undefined;
    const byStranger = await statementsMatching(m.pool, lookups, async () => (res = await add(m, stranger.token, chat.id, others.map((u) => u.id))));
    assert.deepEqual([res!.status, res!.body.code], [404, 'MSG_CHAT_NOT_FOUND']);
    assert.equal(byStranger, 0, 'no lookup of the users for a caller who is not in the chat');
    const strangerOne = await statementsMatching(m.pool, perUser, async () => add(m, stranger.token, chat.id, [others[0]!.id]));
    const strangerMany = await statementsMatching(m.pool, perUser, async () => add(m, stranger.token, chat.id, others.map((u) => u.id)));
    assert.equal(strangerMany, strangerOne, 'a stranger asking for twenty users costs what asking for one does');

    const byOwner = await statementsMatching(m.pool, perUser, async () => (res = await add(m, alice.token, chat.id, others.map((u) => u.id))));
    assert.equal(res!.status, 200);
    assert.equal(res!.body.participants.length, 22);
    // Only the caller's own checks read one user; the twenty added are one statement.
    const callerChecks = await statementsMatching(m.pool, perUser, async () => add(m, alice.token, chat.id, [bob.id]));
    assert.ok(callerChecks >= 1, 'the caller\'s own checks are seen');
    assert.equal(byOwner, callerChecks);
    const unknown = await add(m, alice.token, chat.id, [newId()]);
    assert.deepEqual([unknown.status, unknown.body.code], [404, 'MSG_USER_NOT_FOUND']);
  });

  test('chat creation and participant adds are rate limited per user: 429 RATE_LIMITED with Retry-After, nothing stored', async () => {
    const m = await messengerApp({}, { rateLimitChatChangesPerMinute: 2 });
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const chat = (await group(m, alice.token, [bob.id])).body;
    assert.equal((await group(m, alice.token, [bob.id])).status, 201);
    assert.equal((await add(m, alice.token, chat.id, [carol.id])).status, 200);
    assert.equal((await add(m, alice.token, chat.id, [carol.id])).status, 200);
    const headers = { authorization: `Bearer ${alice.token}` };
    for (const [what, req] of [
      ['create', { method: 'POST', url: '/api/messenger/chats', headers, payload: { kind: 'Group', title: 'G', memberUserIds: [carol.id] } }],
      ['add', { method: 'POST', url: `/api/messenger/chats/${chat.id}/participants`, headers, payload: { userIds: [carol.id] } }],
    ] as const) {
      const stored = await storedDigests(m.pool);
      const res = await m.app.inject(req);
      assert.equal(res.statusCode, 429, what);
      assert.equal((res.json() as Err).code, 'RATE_LIMITED');
      const retryAfter = Number(res.headers['retry-after']);
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `${what}: Retry-After ${res.headers['retry-after']}`);
      assert.deepEqual(changedTables(stored, await storedDigests(m.pool)), [], `${what}: stored something`);
    }
    assert.equal((await group(m, bob.token, [carol.id])).status, 201, 'another user has counters of its own');
  });
});
