import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connectClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { messengerApp } from '../support/app.ts';

type Chat = { id: string };

describe('realtime dispatch to a MessagePack client', () => {
  test('a chat message sent through REST reaches a MessagePack client of a member with the payload a JSON client gets', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
    const packed = await connectClient(m.url, bob.token, { protocol: 'messagepack', events: ['message_received'] });
    const json = await m.connect(bob.token, ['message_received']);

    const sent = await m.call<{ id: string; seq: number }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'hello over MessagePack' });
    assert.equal(sent.status, 201);
    await m.dispatch();

    await waitFor('both deliveries', () => packed.received.length === 1 && json.received.length === 1);
    assert.deepEqual(packed.received, json.received);
    const payload = packed.received[0]!.payload as Record<string, unknown>;
    assert.equal(payload.ChatId, chat.id);
    assert.equal(payload.MessageId, sent.body.id);
    assert.equal(payload.Seq, sent.body.seq);
    assert.equal(payload.Body, 'hello over MessagePack');
    assert.equal(typeof payload.SentAt, 'string', 'an ISO date, as over JSON');
  });
});
