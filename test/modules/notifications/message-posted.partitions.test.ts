import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Message } from 'kafkajs';
import { TOPICS } from '../../../src/event-topics.ts';
import { newId } from '../../../src/platform/time.ts';
import { createTestKafka } from '../../support/kafka.ts';
import { waitFor } from '../../support/wait.ts';
import { notificationsWorld } from './support.ts';

/**
 * One chat's backlog does not hold another chat's notifications (src/platform/events/kafka-batch.ts,
 * BATCH_YIELD_MS, and the consumer's partitions read at once), on the real broker. The collapse window
 * is off here so that every message of the flood costs its full write and the backlog is long.
 */
const k = await createTestKafka();
const w = await notificationsWorld({
  KAFKA_BROKERS: k.brokers.join(','),
  KAFKA_TOPIC_PREFIX: k.prefix,
  JOBS_ENABLED: 'true',
  NOTIFICATIONS_CHAT_COLLAPSE_WINDOW: '0s',
}, { tuning: { kafkaTopicPartitions: 2 } });
const a = w.main;
await a.app.platform.startBackground();
const topic = k.topic(TOPICS.messagePosted);

function posted(chatId: string, to: string[], seq: number, partition: number): Message {
  const payload = { ChatId: chatId, MessageId: newId(), Seq: seq, SenderUserId: newId(), RecipientUserIds: to, RequestUserIds: [], Kind: 'Text', SentAt: new Date().toISOString() };
  const headers = { 'message-id': newId(), 'event-type': 'MessagePostedKafkaEvent', 'contract-version': '1', 'aggregate-type': 'Chat', 'aggregate-id': chatId, 'occurred-at': payload.SentAt };
  return { key: chatId, value: JSON.stringify(payload), headers, partition };
}

describe('the offline path under one chat flooding its partition', () => {
  test("another partition's notification is written while the flood's fetched backlog is still being worked through, not after it", async () => {
    const members = Array.from({ length: 400 }, () => newId());
    const group = newId();
    // 40 messages to 400 members, one produce (one record batch): the consumer fetches them as one batch.
    await k.produce(topic, Array.from({ length: 40 }, (_, i) => posted(group, members, i + 1, 0)));
    const floodRows = async () =>
      (await a.pool.query<{ n: number }>(`select count(*)::int as n from notifications.notifications where data->>'ChatId' = $1`, [group])).rows[0]!.n;
    await waitFor('the flood being handled', async () => (await floodRows()) > 0, 30_000);

    const carol = newId();
    await k.produce(topic, [posted(newId(), [carol], 1, 1)]);
    await waitFor("Carol's notification", async () => (await a.pool.query(`select 1 from notifications.notifications where recipient_user_id = $1`, [carol])).rowCount === 1, 60_000);
    await waitFor('the flood handled', async () => (await floodRows()) === 40 * 400, 120_000);

    // Ids are UUIDv7, taken when the rows are written: the flood's messages written after Carol's.
    const { rows } = await a.pool.query<{ after: number }>(
      `select count(distinct data->>'MessageId')::int as after from notifications.notifications
        where data->>'ChatId' = $1 and id > (select id from notifications.notifications where recipient_user_id = $2)`,
      [group, carol],
    );
    assert.ok(rows[0]!.after > 0, `Carol's notification waited for the whole flood (${rows[0]!.after} of its 40 messages after it)`);
  });
});
