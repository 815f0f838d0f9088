import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import { changedTables, storedDigests } from '../../../support/stored.ts';
import { messengerApp } from '../support/app.ts';

/**
 * Unknown is not inactive: a token's user the replica has never seen is told so (403
 * MSG_USER_NOT_REPLICATED), not that its account is blocked; a user named by id that the replica
 * does not have is 404 MSG_USER_NOT_FOUND naming it, not "no active user with this phone number".
 */

type Err = { code: string; message: string };

describe('users the messenger replica does not know', () => {
  test("a token's user the replica has never seen is refused its writes with MSG_USER_NOT_REPLICATED, and nothing is stored", async () => {
    const m = await messengerApp();
    const alice = await m.user();
    const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'G', memberUserIds: [] })).body;
    const stranger = await m.token({ userId: newId() });
    const before = await storedDigests(m.pool);
    for (const [url, body] of [
      ['/api/messenger/chats', { kind: 'Direct', memberUserIds: [alice.id] }],
      [`/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'hi' }],
      ['/api/messenger/calls', { calleeUserId: alice.id, media: 'Audio' }],
      ['/api/messenger/contacts/requests', { phone: alice.phone }],
    ] as const) {
      const r = await m.call<Err>(stranger, 'POST', url, body);
      assert.deepEqual([r.status, r.body.code], [403, 'MSG_USER_NOT_REPLICATED'], url);
      assert.doesNotMatch(r.body.message, /blocked|archived/, url);
    }
    assert.deepEqual(changedTables(before, await storedDigests(m.pool)), []);
    // Its reads still answer (seed 002's consistency window): it simply has nothing yet.
    assert.equal((await m.call(stranger, 'GET', '/api/messenger/chats')).status, 200);
  });

  test('a chat member or a callee named by an id the replica does not have is 404 MSG_USER_NOT_FOUND naming that id, and nothing is stored', async () => {
    const m = await messengerApp();
    const alice = await m.user();
    const ghost = newId();
    const before = await storedDigests(m.pool);
    for (const [url, body] of [
      ['/api/messenger/chats', { kind: 'Direct', memberUserIds: [ghost] }],
      ['/api/messenger/chats', { kind: 'Group', title: 'G', memberUserIds: [ghost] }],
      ['/api/messenger/calls', { calleeUserId: ghost, media: 'Audio' }],
    ] as const) {
      const r = await m.call<Err>(alice.token, 'POST', url, body);
      assert.deepEqual([r.status, r.body.code], [404, 'MSG_USER_NOT_FOUND'], url);
      assert.match(r.body.message, new RegExp(ghost), url);
    }
    assert.deepEqual(changedTables(before, await storedDigests(m.pool)), []);
  });
});
