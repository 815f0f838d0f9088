import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../../support/wait.ts';
import { ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * A notification level set on one device reaches the user's other devices
 * (chats/notification-level.ts): `notification_level_changed` { ChatId, Level } to the caller's own
 * user:{UserId}, through the realtime outbox (so also in their event stream), only when the level
 * changed; never to another member of the chat.
 */

const EVENTS = ['notification_level_changed', 'message_received'];
type Frame = { ChatId: string; Level: string };
type User = Awaited<ReturnType<MessengerApp['user']>>;
const setLevel = (m: MessengerApp, u: User, chatId: string, level: string) =>
  m.call<{ notificationLevel: string; code?: string }>(u.token, 'PUT', `/api/messenger/chats/${chatId}/notifications`, { level });
const streamOf = async (m: MessengerApp, u: User) =>
  (await m.call<{ events: { name: string; payload: Frame }[] }>(u.token, 'GET', '/api/events?after=e0')).body.events
    .filter((e) => e.name === 'notification_level_changed').map((e) => [e.payload.ChatId, e.payload.Level]);

describe('notification_level_changed', () => {
  test("reaches the caller's other connection with ChatId and the new level, not another member; an unchanged level pushes nothing", async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chatId = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal', memberUserIds: [bob.id] })).body.id;
    const [phone, laptop, bobs] = [await m.connect(alice.token, EVENTS), await m.connect(alice.token, EVENTS), await m.connect(bob.token, EVENTS)];
    const set = await setLevel(m, alice, chatId, 'mentions');
    assert.deepEqual([set.status, set.body.notificationLevel], [200, 'mentions']);
    assert.equal((await setLevel(m, alice, chatId, 'mentions')).status, 200, 'the same level again: a no-op');
    assert.equal((await setLevel(m, alice, chatId, 'off')).status, 200);
    // After the level frames: a message of bob's in the chat, which every connection gets.
    assert.equal((await m.call(bob.token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body: 'fence' })).status, 201);
    await m.dispatch();
    for (const c of [phone, laptop, bobs]) await waitFor('the fence', () => ofEvent(c, 'message_received').length === 1);
    for (const c of [phone, laptop]) {
      assert.deepEqual(ofEvent<Frame>(c, 'notification_level_changed').map((f) => [f.ChatId, f.Level]), [[chatId, 'mentions'], [chatId, 'off']]);
    }
    assert.deepEqual(ofEvent(bobs, 'notification_level_changed'), [], "another member never learns of someone's level");
    assert.deepEqual(await streamOf(m, alice), [[chatId, 'mentions'], [chatId, 'off']]);
    assert.deepEqual(await streamOf(m, bob), []);
  });

  test('a chat the caller is not in: 404, nothing pushed', async () => {
    const m = await messengerApp();
    const [alice, bob, eve] = [await m.user(), await m.user(), await m.user()];
    const chatId = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal', memberUserIds: [bob.id] })).body.id;
    const refused = await setLevel(m, eve, chatId, 'off');
    assert.equal(refused.status, 404);
    assert.equal(refused.body.code, 'MSG_CHAT_NOT_FOUND');
    const { rows } = await m.pool.query(`select 1 from push.realtime_outbox where kind = 'NotificationLevelChanged' and target_user_id = $1`, [eve.id]);
    assert.equal(rows.length, 0);
  });
});
