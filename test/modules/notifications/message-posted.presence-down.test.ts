import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Message } from 'kafkajs';
import { TOPICS } from '../../../src/event-topics.ts';
import { newId } from '../../../src/platform/time.ts';
import { createTestKafka } from '../../support/kafka.ts';
import { startPrivateRedis } from '../../support/redis.ts';
import { notificationsWorld } from './support.ts';
import { waitFor } from '../../support/wait.ts';

const k = await createTestKafka();
await k.createTopics([{ name: TOPICS.messagePosted, partitions: 1 }]);
const redis = await startPrivateRedis();
const w = await notificationsWorld({
  KAFKA_BROKERS: k.brokers.join(','),
  KAFKA_TOPIC_PREFIX: k.prefix,
  JOBS_ENABLED: 'true', // consumers start with the background work
  REALTIME_BACKPLANE_ENABLED: 'true',
  REDIS_URL: redis.url,
}, { tuning: { kafkaTopicPartitions: 1 } });
const a = w.main;
await a.app.platform.startBackground();

function messagePosted(payload: Record<string, unknown>): Message {
  const chatId = String(payload.ChatId);
  return {
    key: chatId,
    value: JSON.stringify(payload),
    headers: {
      'message-id': newId(),
      'event-type': 'MessagePostedKafkaEvent',
      'contract-version': '1',
      'aggregate-type': 'Chat',
      'aggregate-id': chatId,
      'occurred-at': new Date().toISOString(),
    },
  };
}

const metric = async (name: string): Promise<number> => {
  const res = await a.app.inject({ method: 'GET', url: '/metrics' });
  const line = res.body.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
};

const recipientsWithRows = async (userIds: string[]) =>
  (
    await a.pool.query<{ recipient: string }>(
      `select distinct recipient_user_id::text as recipient from notifications.notifications where recipient_user_id = any($1::uuid[])`,
      [userIds],
    )
  ).rows.map((r) => r.recipient);

// Runs first: the next test kills the redis-server for good.
test('with the hub presence store (Redis) hanging — up but silent — each lookup gives up after its bound: recipients are notified, failures counted', async () => {
  const failuresBefore = await metric('notifications_presence_lookup_failures_total');
  const [sender, first, second, later] = [newId(), newId(), newId(), newId()];
  const posted = { ChatId: newId(), MessageId: newId(), Seq: 1, SenderUserId: sender, Kind: 'Text', SentAt: new Date().toISOString() };
  redis.process.kill('SIGSTOP'); // connections stay open, nothing answers
  try {
    await k.produce(k.topic(TOPICS.messagePosted), [
      messagePosted({ ...posted, RecipientUserIds: [first, second] }),
      messagePosted({ ...posted, MessageId: newId(), Seq: 2, RecipientUserIds: [later] }),
    ]);

    // Well before the redis-server resumes (finally below): nothing waits for it.
    await waitFor('every recipient notified while Redis hangs', async () => (await recipientsWithRows([first, second, later])).length === 3, 20_000);
    assert.deepEqual((await recipientsWithRows([first, second, later])).sort(), [first, second, later].sort());
    assert.equal(await metric('notifications_presence_lookup_failures_total'), failuresBefore + 3, 'one failure per timed-out lookup');
  } finally {
    redis.process.kill('SIGCONT');
  }
});

test('with the hub presence store (Redis) down, recipients are treated as offline and notified instead of blocking the partition', async () => {
  const failuresBefore = await metric('notifications_presence_lookup_failures_total');
  await redis.kill();
  const [sender, first, second] = [newId(), newId(), newId()];
  const posted = { ChatId: newId(), MessageId: newId(), Seq: 1, SenderUserId: sender, Kind: 'Text', SentAt: new Date().toISOString() };
  await k.produce(k.topic(TOPICS.messagePosted), [messagePosted({ ...posted, RecipientUserIds: [first, second] })]);
  // The next message on the same partition is handled too: nothing waits for Redis.
  const later = newId();
  await k.produce(k.topic(TOPICS.messagePosted), [messagePosted({ ...posted, MessageId: newId(), Seq: 2, RecipientUserIds: [later] })]);

  await waitFor('every recipient notified while Redis is down', async () => (await recipientsWithRows([first, second, later])).length === 3, 20_000);
  assert.deepEqual((await recipientsWithRows([first, second, later])).sort(), [first, second, later].sort());
  assert.equal(await metric('notifications_presence_lookup_failures_total'), failuresBefore + 3);
});
