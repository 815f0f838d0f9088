import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_EVENTS, ofEvent, messengerApp } from '../support/app.ts';
import { waitFor } from '../../../support/wait.ts';

type Chat = { id: string; kind: string; title: string | null; lastSeq: number; participants: { userId: string; role: string }[] };
type Err = { code: string; message: string };
type Payload = Record<string, unknown>;


describe('chats: create, get, rename, participants (record-level rules, member events)', () => {
  test('a new group chat: members get chat_updated and their already open connections join chat:{ChatId}', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const [ca, cb, cc] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(bob.token, ALL_EVENTS), await m.connect(carol.token, ALL_EVENTS)];
    const created = await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal 42', memberUserIds: [bob.id] });
    assert.equal(created.status, 201);
    assert.equal(created.body.kind, 'Group');
    assert.deepEqual(created.body.participants.map((p) => [p.userId, p.role]).sort(), [[alice.id, 'Owner'], [bob.id, 'Member']].sort());
    await m.dispatch();
    await waitFor('chat_updated to both members', () => ofEvent(ca, 'chat_updated').length === 1 && ofEvent(cb, 'chat_updated').length === 1);
    assert.equal(ofEvent(cb, 'chat_updated')[0]!.Change, 'Created');

    const sent = await m.call<{ seq: number }>(bob.token, 'POST', `/api/messenger/chats/${created.body.id}/messages`, { kind: 'Text', body: 'hi all' });
    assert.equal(sent.status, 201);
    await m.dispatch();
    await waitFor('the message on the connection opened before the chat existed', () => ofEvent(ca, 'message_received').length === 1);
    assert.equal(ofEvent(ca, 'message_received')[0]!.Body, 'hi all');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(cc.received.length, 0, 'a user outside the chat sees nothing of it');
  });

  test('direct chat: one per pair — opening it again returns the existing one; self, unknown or inactive users are refused', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const first = await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] });
    assert.equal(first.status, 201);
    const again = await m.call<Chat>(bob.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [alice.id] });
    assert.equal(again.status, 200);
    assert.equal(again.body.id, first.body.id);
    const self = await m.call<Err>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [alice.id] });
    assert.deepEqual([self.status, self.body.code], [400, 'MSG_CHAT_INVALID']);
    const unknown = await m.call<Err>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: ['0190a000-0000-7000-8000-000000000001'] });
    assert.deepEqual([unknown.status, unknown.body.code], [404, 'MSG_USER_NOT_FOUND']);
    const untitled = await m.call<Err>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', memberUserIds: [bob.id] });
    assert.deepEqual([untitled.status, untitled.body.code], [400, 'MSG_CHAT_INVALID']);
  });

  test('only active participants see a chat: others get 404 on the chat, its messages and its operations', async () => {
    const m = await messengerApp();
    const [alice, bob, eve] = [await m.user(), await m.user(), await m.user()];
    const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
    const base = `/api/messenger/chats/${chat.id}`;
    for (const [method, url, payload] of [
      ['GET', base, undefined],
      ['GET', `${base}/messages`, undefined],
      ['POST', `${base}/messages`, { kind: 'Text', body: 'x' }],
      ['POST', `${base}/read`, { seq: 1 }],
      ['PATCH', base, { title: 'mine now' }],
    ] as const) {
      const res = await m.call<Err>(eve.token, method, url, payload);
      assert.deepEqual([res.status, res.body.code], [404, 'MSG_CHAT_NOT_FOUND'], `${method} ${url}`);
    }
    const mine = await m.call<{ items: Chat[] }>(eve.token, 'GET', '/api/messenger/chats');
    assert.equal(mine.body.items.length, 0);
    assert.equal((await m.call<{ items: Chat[] }>(bob.token, 'GET', '/api/messenger/chats')).body.items[0]!.id, chat.id);
  });

  test('rename, add and remove are the owner’s (or an admin’s); a member may only leave', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
    const base = `/api/messenger/chats/${chat.id}`;
    assert.equal((await m.call<Err>(bob.token, 'PATCH', base, { title: 'X' })).body.code, 'MSG_CHAT_FORBIDDEN');
    assert.equal((await m.call<Err>(bob.token, 'POST', `${base}/participants`, { userIds: [carol.id] })).body.code, 'MSG_CHAT_FORBIDDEN');
    assert.equal((await m.call<Err>(bob.token, 'DELETE', `${base}/participants/${alice.id}`)).body.code, 'MSG_CHAT_FORBIDDEN');
    assert.equal((await m.call<Err>(alice.token, 'DELETE', `${base}/participants/${alice.id}`)).body.code, 'MSG_CHAT_OWNER_CANNOT_LEAVE');
    const renamed = await m.call<Chat>(alice.token, 'PATCH', base, { title: 'Deal 43' });
    assert.equal(renamed.body.title, 'Deal 43');
    const admin = await m.token({ userId: alice.id, admin: true });
    assert.equal((await m.call<Chat>(admin, 'POST', `${base}/participants`, { userIds: [carol.id] })).status, 200);
    assert.equal((await m.call(bob.token, 'DELETE', `${base}/participants/${bob.id}`)).status, 204, 'a member leaves');
    const direct = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body;
    assert.equal((await m.call<Err>(alice.token, 'POST', `/api/messenger/chats/${direct.id}/participants`, { userIds: [carol.id] })).body.code, 'MSG_CHAT_DIRECT_MEMBERS_FIXED');
  });

  test('a group has at most 500 participants (GROUP_MAX_PARTICIPANTS): creating or adding past it is 409 MSG_CHAT_FULL and changes nothing', async () => {
    const m = await messengerApp();
    const owner = await m.user();
    const others = (
      await m.pool.query<{ id: string }>(
        `insert into messenger.users (id, first_name, last_name, phone_number, is_active, identity_user_version, created_at, updated_at)
         select gen_random_uuid(), 'Иван', 'Петров', '+7925' || lpad(i::text, 7, '0'), true, 1, now(), now() from generate_series(1, 500) i
         returning id`,
      )
    ).rows.map((r) => r.id);
    const create = (members: string[]) => m.call<{ id: string; code: string }>(owner.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: members });
    const tooMany = await create(others);
    assert.deepEqual([tooMany.status, tooMany.body.code], [409, 'MSG_CHAT_FULL'], 'the owner and 500 others are 501');

    const chat = await create(others.slice(0, 498));
    assert.equal(chat.status, 201);
    const base = `/api/messenger/chats/${chat.body.id}/participants`;
    const past = await m.call<{ code: string }>(owner.token, 'POST', base, { userIds: others.slice(498, 500) });
    assert.deepEqual([past.status, past.body.code], [409, 'MSG_CHAT_FULL']);
    assert.equal((await m.call(owner.token, 'POST', base, { userIds: [others[498]] })).status, 200, 'the 500th fits');
    const { rows } = await m.pool.query<{ n: number }>(`select count(*)::int as n from messenger.chat_participants where chat_id = $1 and status = 'Active'`, [chat.body.id]);
    assert.equal(rows[0]!.n, 500);
  });

  test('UC-MSG-008: an added participant’s open connection joins at once and receives the chat from then on', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [] as string[] })).body;
    const cb = await m.connect(bob.token, ALL_EVENTS);
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/participants`, { userIds: [bob.id] });
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'welcome' });
    await m.dispatch();
    await waitFor('the message to the new participant', () => ofEvent(cb, 'message_received').length === 1);
    const added = ofEvent(cb, 'chat_updated').find((p) => p.Change === 'ParticipantAdded');
    assert.equal(added?.SubjectUserId, bob.id);
  });

  test('a removed participant leaves chat:{ChatId} at once: it is told via user:{UserId}, then receives nothing more and cannot read the chat', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
    const [ca, cb] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(bob.token, ALL_EVENTS)];
    await m.dispatch();
    assert.equal((await m.call(alice.token, 'DELETE', `/api/messenger/chats/${chat.id}/participants/${bob.id}`)).status, 204);
    // Sent right after the removal, pushed together with it.
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'after bob left' });
    await m.dispatch();
    await waitFor('the remaining member to get the message', () => ofEvent(ca, 'message_received').length === 1);
    await waitFor('bob told through his user group', () => ofEvent(cb, 'chat_updated').some((p) => p.Change === 'ParticipantRemoved'));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(ofEvent(cb, 'message_received').length, 0, 'nothing from the chat after the removal');
    assert.equal((await m.call<Err>(bob.token, 'GET', `/api/messenger/chats/${chat.id}/messages`)).status, 404);
    // A new connection of bob's does not join the chat either.
    const cb2 = await m.connect(bob.token, ALL_EVENTS);
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'again' });
    await m.dispatch();
    await waitFor('the second message', () => ofEvent(ca, 'message_received').length === 2);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(ofEvent(cb2, 'message_received').length + ofEvent(cb, 'message_received').length, 0);
  });
});
