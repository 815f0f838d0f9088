import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import { connectClient } from '../../../support/signalr.ts';
import { startPrivateRedis } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { messengerApp } from '../support/app.ts';
import { secondReplica } from '../support/replica.ts';
import { applyUserStatus } from '../support/user-sync.ts';

type Err = { code: string };

describe('blocked and archived users lose access (seed 002: IsActive false)', () => {
  test('an inactive user can neither send into its chats nor be messaged in a direct chat, called or requested as a contact', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const direct = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body;
    const group = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'G', memberUserIds: [bob.id, carol.id] })).body;
    const send = (token: string, chatId: string, extra: object = {}) =>
      m.call<Err>(token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body: 'hi', ...extra });
    assert.equal((await send(bob.token, group.id)).status, 201);
    const retried = { clientMessageId: newId() };
    assert.equal((await send(bob.token, group.id, retried)).status, 201);

    await applyUserStatus(m, bob, 'Blocked', 2);
    const own = await send(bob.token, group.id);
    assert.deepEqual([own.status, own.body.code], [403, 'MSG_USER_INACTIVE'], 'the blocked user cannot send');
    // The send statement judges the sender's activity before anything else about the send.
    for (const [what, chatId, extra] of [
      ['a retry of a stored send', group.id, retried],
      ['a send to a chat that does not exist', newId(), {}],
      ['a send with an invalid body', group.id, { body: ' ' }],
    ] as const) {
      const r = await send(bob.token, chatId, extra);
      assert.deepEqual([r.status, r.body.code], [403, 'MSG_USER_INACTIVE'], what);
    }
    const toBlocked = await send(alice.token, direct.id);
    assert.deepEqual([toBlocked.status, toBlocked.body.code], [409, 'MSG_RECIPIENT_INACTIVE'], 'nobody can message the blocked user directly');
    assert.equal((await send(alice.token, group.id)).status, 201, 'the group goes on for the others');
    const call = await m.call<Err>(alice.token, 'POST', '/api/messenger/calls', { calleeUserId: bob.id, media: 'Audio' });
    assert.deepEqual([call.status, call.body.code], [404, 'MSG_USER_NOT_FOUND']);
    const contact = await m.call<Err>(carol.token, 'POST', '/api/messenger/contacts/requests', { phone: bob.phone });
    assert.deepEqual([contact.status, contact.body.code], [404, 'MSG_CONTACT_USER_NOT_FOUND']);
    for (const [url, body] of [
      ['/api/messenger/calls', { calleeUserId: alice.id, media: 'Audio' }],
      ['/api/messenger/contacts/requests', { phone: alice.phone }],
      ['/api/messenger/chats', { kind: 'Group', title: 'X', memberUserIds: [alice.id] }],
    ] as const) {
      const r = await m.call<Err>(bob.token, 'POST', url, body);
      assert.deepEqual([r.status, r.body.code], [403, 'MSG_USER_INACTIVE'], url);
    }

    // The batch path of the consumer turns the user active again; everything works again.
    await applyUserStatus(m, bob, 'Active', 3, true);
    assert.equal((await send(bob.token, group.id)).status, 201);
    assert.equal((await send(alice.token, direct.id)).status, 201);
  });

  test('turning inactive closes the user\'s hub connections on every replica with a close message; reconnecting is refused', async () => {
    const redis = await startPrivateRedis();
    const a = await messengerApp({ REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL: redis.url });
    const b = await secondReplica(a, { REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL: redis.url });
    const [alice, bob] = [await a.user(), await a.user()];
    const onA = await a.connect(bob.token, []);
    const onB = await connectClient(b.url, bob.token);
    const bystander = await connectClient(b.url, alice.token);

    await applyUserStatus(a, bob, 'Archived', 2, true);
    await a.dispatch();
    await waitFor('both of bob\'s connections closed', () => onA.closed && onB.closed);
    assert.match(String(onB.closedWith), /Forbidden: the user is blocked or archived/);
    assert.equal(bystander.closed, false);
    await assert.rejects(connectClient(b.url, bob.token), /Forbidden: the user is blocked or archived/);
  });
});
