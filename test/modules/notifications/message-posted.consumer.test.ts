import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Message } from 'kafkajs';
import { TOPICS } from '../../../src/event-topics.ts';
import { newId } from '../../../src/platform/time.ts';
import { connectClient } from '../../support/signalr.ts';
import { createTestKafka } from '../../support/kafka.ts';
import { notificationsWorld, setChannel } from './support.ts';
import { waitFor } from '../../support/wait.ts';

const k = await createTestKafka();
const w = await notificationsWorld({
  KAFKA_BROKERS: k.brokers.join(','),
  KAFKA_TOPIC_PREFIX: k.prefix,
  JOBS_ENABLED: 'true',
  OUTBOX_POLLING_INTERVAL: '200ms',
}, { tuning: { kafkaTopicPartitions: 2 } });
const a = w.main;
await a.app.listen({ host: '127.0.0.1', port: 0 });
const hubUrl = `http://127.0.0.1:${(a.app.server.address() as { port: number }).port}/hubs/messenger`;
await setChannel(a, 'Push', { maxAttempts: 3 });
await a.app.platform.startBackground();

/** A MessagePostedKafkaEvent as the messenger's outbox puts it on the wire. */
function messagePosted(payload: Record<string, unknown>, messageId = newId()): Message {
  const chatId = String(payload.ChatId);
  return {
    key: chatId,
    value: JSON.stringify(payload),
    headers: {
      'message-id': messageId,
      'event-type': 'MessagePostedKafkaEvent',
      'contract-version': '1',
      'aggregate-type': 'Chat',
      'aggregate-id': chatId,
      'occurred-at': new Date().toISOString(),
      'correlation-id': newId(),
    },
  };
}

const rowsOf = async (userId: string) =>
  (
    await a.pool.query<{ id: string; channel: string; status: string; data: Record<string, unknown> }>(
      'select id, channel, status, data from notifications.notifications where recipient_user_id = $1 order by channel',
      [userId],
    )
  ).rows;

async function registerToken(userId: string, token: string) {
  const res = await a.app.inject({
    method: 'POST',
    url: '/api/notifications/push-tokens',
    headers: { authorization: `Bearer ${await a.userToken(userId)}` },
    payload: { token, platform: 'ios' },
  });
  assert.equal(res.statusCode, 204);
}

describe('MessagePostedKafkaEvent consumer (the offline path)', () => {
  test('only recipients not connected to the hub get an in-app notification and a push; the sender and online users get none', async () => {
    const [sender, online, offline] = [newId(), newId(), newId()];
    await connectClient(hubUrl, await a.userToken(online));
    await registerToken(offline, `device-${offline}`);
    await registerToken(online, `device-${online}`);
    const chatId = newId();
    const messageId = newId();
    const envelopeId = newId();
    const event = messagePosted(
      { ChatId: chatId, MessageId: messageId, Seq: 17, SenderUserId: sender, RecipientUserIds: [online, offline], Kind: 'Text', SentAt: new Date().toISOString() },
      envelopeId,
    );
    await k.produce(k.topic(TOPICS.messagePosted), [event]);

    await waitFor('the offline recipient notified', async () => (await rowsOf(offline)).filter((r) => r.status === 'Sent').length === 2);
    const rows = await rowsOf(offline);
    assert.deepEqual(rows.map((r) => r.channel), ['InApp', 'Push']);
    assert.deepEqual(rows[0]!.data, { ChatId: chatId, MessageId: messageId, Seq: 17, SenderUserId: sender, Kind: 'Text', SentAt: rows[0]!.data.SentAt });
    assert.deepEqual(await rowsOf(online), []);
    assert.deepEqual(await rowsOf(sender), []);

    const push = w.http.requests.find((r) => r.body.token === `device-${offline}`)!;
    assert.equal((push.body.data as Record<string, unknown>).MessageId, messageId, 'the push points at the message, never carries its body');

    // The outcome reaches Kafka through the outbox, keyed by NotificationId.
    const pushId = rows[1]!.id;
    const out = await k.readTopic(k.topic(TOPICS.notificationDispatched), { atLeast: 2 });
    const mine = out.find((m) => m.key === pushId)!;
    assert.equal(mine.headers['event-type'], 'NotificationDispatchedEvent');
    assert.equal(mine.headers['contract-version'], '1');
    assert.deepEqual(
      { ...JSON.parse(mine.value!.toString()), OccurredAt: undefined, ProviderMessageId: undefined },
      { NotificationId: pushId, Channel: 'Push', Status: 'Sent', DeliveryCycle: 1, OccurredAt: undefined, ProviderMessageId: undefined },
    );

    // Redelivery (same message-id) and a re-publish of the same MessageId create nothing new.
    await k.produce(k.topic(TOPICS.messagePosted), [event, messagePosted(JSON.parse(String(event.value)))]);
    const marker = newId();
    await k.produce(k.topic(TOPICS.messagePosted), [
      messagePosted({ ChatId: chatId, MessageId: newId(), Seq: 18, SenderUserId: sender, RecipientUserIds: [marker], Kind: 'Text', SentAt: new Date().toISOString() }),
    ]);
    await waitFor('a later message on the same chat to be handled', async () => (await rowsOf(marker)).length > 0);
    assert.equal((await rowsOf(offline)).length, 2);
  });

  test("each recipient's chat notification level is honoured: all as before, off never, mentions only when mentioned", async () => {
    const [sender, all, muted, mentionedOnly, unmentionedOnly, marker] = [newId(), newId(), newId(), newId(), newId(), newId()];
    const chatId = newId();
    const sentAt = new Date().toISOString();
    await k.produce(k.topic(TOPICS.messagePosted), [
      messagePosted({
        ChatId: chatId, MessageId: newId(), Seq: 1, SenderUserId: sender, Kind: 'Text', SentAt: sentAt,
        RecipientUserIds: [all, muted, mentionedOnly, unmentionedOnly],
        MentionedUserIds: [mentionedOnly, muted],
        MutedUserIds: [muted],
        MentionsOnlyUserIds: [mentionedOnly, unmentionedOnly],
      }),
      // The same chat (one partition, in order): once its marker is notified, the event before it was handled.
      messagePosted({ ChatId: chatId, MessageId: newId(), Seq: 2, SenderUserId: sender, RecipientUserIds: [marker], Kind: 'Text', SentAt: sentAt }),
    ]);
    await waitFor('the later event of the chat handled', async () => (await rowsOf(marker)).length > 0);
    assert.deepEqual((await rowsOf(all)).map((r) => r.channel), ['InApp'], 'level all: notified as before');
    assert.deepEqual((await rowsOf(mentionedOnly)).map((r) => r.channel), ['InApp'], 'level mentions, mentioned: notified');
    assert.deepEqual(await rowsOf(unmentionedOnly), [], 'level mentions, not mentioned: nothing');
    assert.deepEqual(await rowsOf(muted), [], 'level off: nothing, even when mentioned');
  });

  test('a MessagePostedKafkaEvent that breaks the contract goes to the DLQ with NTF_MESSAGE_POSTED_INVALID', async () => {
    const chatId = newId();
    await k.produce(k.topic(TOPICS.messagePosted), [messagePosted({ ChatId: chatId, MessageId: 'not-a-uuid', RecipientUserIds: 'everyone' })]);
    const dlq = await k.readTopic(`${k.topic(TOPICS.messagePosted)}.dlq`, { atLeast: 1 });
    assert.equal(dlq[0]!.headers['dlq-code'], 'NTF_MESSAGE_POSTED_INVALID');
    assert.equal(dlq[0]!.key, chatId);
  });
});
