import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerClient, MessengerError, type ContactPayload } from '../../../packages/messenger-client/src/index.ts';
import { notificationsModule } from '../../../src/modules/notifications/index.ts';
import { messengerApp } from './support/app.ts';
import { clientOf } from './support/library-client.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * What an app calls besides chatting, through the client library against the real service:
 * message requests (isRequest, accept, decline), blocking, contacts, group members, the device's
 * push token, and history pages that say whether there is more.
 */

const refusal = (p: Promise<unknown>) => p.then(() => assert.fail('resolved'), (e: unknown) => (assert.ok(e instanceof MessengerError), e));

describe('client library: what an app calls', () => {
  test('a chat from a stranger is a message request (isRequest) until accepted, in getChat and in the chat list', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const a = clientOf(m, alice.token);
    const chat = await clientOf(m, bob.token).createChat({ kind: 'Direct', memberUserIds: [alice.id] });
    assert.equal(chat.isRequest, false, 'not to its creator');
    assert.equal((await a.getChat(chat.id)).isRequest, true);
    assert.deepEqual((await a.chatList()).items.map((c) => [c.id, c.isRequest]), [[chat.id, true]]);
    assert.equal((await a.acceptChat(chat.id)).isRequest, false);
    assert.equal((await a.chatList()).items[0]!.isRequest, false);
  });

  test('declining a group request leaves the group; declining a Direct one blocks its sender, and unblocking undoes it', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const a = clientOf(m, alice.token);
    const b = clientOf(m, bob.token);
    const group = await b.createChat({ kind: 'Group', title: 'G', memberUserIds: [alice.id] });
    assert.deepEqual(await a.declineChat(group.id), { left: true });
    assert.equal((await refusal(a.getChat(group.id))).code, 'MSG_CHAT_NOT_FOUND');
    const direct = await b.createChat({ kind: 'Direct', memberUserIds: [alice.id] });
    assert.deepEqual(await a.declineChat(direct.id), { blockedUserId: bob.id });
    assert.deepEqual((await a.blockedUsers()).map((e) => [e.blockedUserId, e.status]), [[bob.id, 'Blocked']]);
    assert.equal((await a.unblockUser(bob.id)).status, 'Unblocked');
    assert.equal((await a.blockUser(bob.id)).status, 'Blocked');
    assert.equal((await refusal(a.blockUser(alice.id))).code, 'MSG_BLACKLIST_SELF');
  });

  test('contacts: request by phone, the other side is told (typed per event name), accepts, and either removes it', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const a = clientOf(m, alice.token);
    const b = clientOf(m, bob.token);
    const told: ContactPayload[] = [];
    b.on('contact_request_received', (p) => told.push(p));
    await b.start();
    const asked = await a.requestContact(bob.phone);
    assert.deepEqual([asked.userId, asked.status, asked.direction], [bob.id, 'Pending', 'Outgoing']);
    await m.dispatch();
    await waitFor('bob is told', () => told.length === 1);
    assert.deepEqual([told[0]!.ContactId, told[0]!.UserId], [asked.id, alice.id]);
    assert.deepEqual((await b.contacts()).map((c) => [c.id, c.direction, c.status]), [[asked.id, 'Incoming', 'Pending']]);
    assert.equal((await refusal(a.acceptContact(asked.id))).code, 'MSG_CONTACT_NOT_ADDRESSEE');
    assert.equal((await b.acceptContact(asked.id)).status, 'Accepted');
    assert.equal((await a.contacts())[0]!.status, 'Accepted');
    await a.removeContact(asked.id);
    assert.deepEqual([await a.contacts(), await b.contacts()], [[], []]);
    assert.equal((await refusal(a.requestContact('not a phone'))).status, 400);
  });

  test('groups: the owner renames, adds and removes members; a member may not rename and may leave', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const a = clientOf(m, alice.token);
    const b = clientOf(m, bob.token);
    const group = await a.createChat({ kind: 'Group', title: 'Before', memberUserIds: [bob.id] });
    assert.equal((await a.renameChat(group.id, 'After')).title, 'After');
    const forbidden = await refusal(b.renameChat(group.id, 'Mine'));
    assert.deepEqual([forbidden.code, forbidden.status], ['MSG_CHAT_FORBIDDEN', 403]);
    const members = (chat: { participants: { userId: string }[] }) => chat.participants.map((p) => p.userId).sort();
    assert.deepEqual(members(await a.addMembers(group.id, [carol.id])), [alice.id, bob.id, carol.id].sort());
    await a.removeMember(group.id, carol.id);
    assert.deepEqual(members(await a.getChat(group.id)), [alice.id, bob.id].sort());
    await b.leaveChat(group.id);
    assert.deepEqual(members(await a.getChat(group.id)), [alice.id]);
    assert.equal((await refusal(a.leaveChat(group.id))).code, 'MSG_CHAT_OWNER_CANNOT_LEAVE');
  });

  test('push tokens: the device registers its token once for its user, another user is refused it, and sign-out removes it', async () => {
    const m = await messengerApp({}, {}, {}, [notificationsModule()]);
    const [alice, bob] = [await m.user(), await m.user()];
    const a = clientOf(m, alice.token);
    const device = `web-push-${crypto.randomUUID()}`;
    const owners = async () => (await m.pool.query<{ user_id: string; platform: string }>('select user_id, platform from notifications.push_tokens where token = $1', [device])).rows;
    await a.registerPushToken(device, 'web');
    await a.registerPushToken(device, 'web');
    assert.deepEqual(await owners(), [{ user_id: alice.id, platform: 'web' }]);
    const taken = await refusal(clientOf(m, bob.token).registerPushToken(device, 'web'));
    assert.deepEqual([taken.code, taken.status], ['NTF_PUSH_TOKEN_TAKEN', 409]);
    await a.unregisterPushToken(device);
    assert.deepEqual(await owners(), []);
    assert.equal((await refusal(a.unregisterPushToken(device))).status, 404);
  });

  test('history pages say whether there is more, in both directions, also on an exact last page', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const a = clientOf(m, alice.token);
    const chat = await a.createChat({ kind: 'Group', title: 'T', memberUserIds: [bob.id] });
    for (const body of ['1', '2', '3', '4', '5']) await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body });
    const page = async (q: Parameters<MessengerClient['history']>[1]) => {
      const p = await a.history(chat.id, q);
      return [p.items.map((x) => x.seq), p.hasMore];
    };
    assert.deepEqual(await page({ beforeSeq: 6, limit: 2 }), [[4, 5], true]);
    assert.deepEqual(await page({ beforeSeq: 4, limit: 2 }), [[2, 3], true]);
    assert.deepEqual(await page({ beforeSeq: 2, limit: 2 }), [[1], false]);
    assert.deepEqual(await page({ beforeSeq: 3, limit: 2 }), [[1, 2], false], 'the oldest page, exactly full');
    assert.deepEqual(await page({ afterSeq: 0, limit: 2 }), [[1, 2], true]);
    assert.deepEqual(await page({ afterSeq: 1, limit: 4 }), [[2, 3, 4, 5], false], 'the newest page, exactly full');
    assert.deepEqual(await page({ afterSeq: 5 }), [[], false]);
  });
});
