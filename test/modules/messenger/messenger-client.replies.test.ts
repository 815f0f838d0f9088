import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerError, type ChatMessage } from '../../../packages/messenger-client/src/index.ts';
import { messengerApp } from './support/app.ts';
import { clientOf } from './support/library-client.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * Replies, mentions and a chat's notification level through the client library against the real
 * service: send() takes replyToMessageId and mentionedUserIds, the members' clients get the message
 * with its parent's preview and its mentions, and setChatNotifications sets the caller's own level.
 */

describe('client library: replies, mentions, notification levels', () => {
  test('a reply with its parent’s preview and a mention arrive through the library, live and in history', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const a = clientOf(m, alice.token);
    const b = clientOf(m, bob.token);
    const chat = await a.createChat({ kind: 'Group', title: 'G', memberUserIds: [bob.id] });
    await b.acceptChat(chat.id);
    const got: ChatMessage[] = [];
    b.on('message', (msg) => got.push(msg));
    await b.start();

    await b.send(chat.id, { kind: 'Text', body: 'lunch?' });
    await m.dispatch();
    await waitFor('the parent', () => got.length === 1);
    await a.send(chat.id, { kind: 'Text', body: 'yes', replyToMessageId: got[0]!.messageId, mentionedUserIds: [bob.id] });
    await a.settled();
    await m.dispatch();
    await waitFor('the reply', () => got.length === 2);
    const reply = got[1]!;
    assert.deepEqual(reply.replyTo, { messageId: got[0]!.messageId, seq: 1, senderUserId: bob.id, kind: 'Text', excerpt: 'lunch?', deleted: false });
    assert.deepEqual(reply.mentionedUserIds, [bob.id]);
    const history = await b.history(chat.id);
    assert.deepEqual(history.items[1]!.replyTo, reply.replyTo, 'history converts the same preview');
    assert.deepEqual(history.items[1]!.mentionedUserIds, [bob.id]);
  });

  test('setChatNotifications sets the caller’s level (notificationLevel), a stranger’s chat is MSG_CHAT_NOT_FOUND', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const a = clientOf(m, alice.token);
    const chat = await a.createChat({ kind: 'Group', title: 'G', memberUserIds: [bob.id] });
    assert.equal(chat.notificationLevel, 'all');
    assert.equal((await a.setChatNotifications(chat.id, 'mentions')).notificationLevel, 'mentions');
    assert.equal((await a.getChat(chat.id)).notificationLevel, 'mentions');
    assert.equal((await clientOf(m, bob.token).getChat(chat.id)).notificationLevel, 'all', 'only the caller’s own');
    const refused = await clientOf(m, carol.token).setChatNotifications(chat.id, 'off').then(() => undefined, (e: unknown) => e);
    assert.ok(refused instanceof MessengerError);
    assert.equal(refused.code, 'MSG_CHAT_NOT_FOUND');
  });
});
