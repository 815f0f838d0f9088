import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Message } from 'kafkajs';
import { TOPICS } from '../../../src/event-topics.ts';
import { newId } from '../../../src/platform/time.ts';
import { createTestKafka } from '../../support/kafka.ts';
import { waitFor } from '../../support/wait.ts';
import { notificationsWorld } from './support.ts';

/**
 * The offline path's bounds against a flooding sender, on the real broker and database: a chat notifies a
 * recipient once per NOTIFICATIONS_CHAT_COLLAPSE_WINDOW (default 60 s) unless they read it, and a
 * member for whom it is a message request once until they accept. The window counts from the
 * messages' SentAt (the consumer reads a backlog later than it was sent), so these tests move time by
 * the events' SentAt.
 */
const k = await createTestKafka();
const w = await notificationsWorld({
  KAFKA_BROKERS: k.brokers.join(','),
  KAFKA_TOPIC_PREFIX: k.prefix,
  JOBS_ENABLED: 'true',
}, { tuning: { kafkaTopicPartitions: 2 } });
const a = w.main;
await a.app.platform.startBackground();
const topic = k.topic(TOPICS.messagePosted);
const T0 = Date.parse('2026-03-01T10:00:00.000Z');

/** A MessagePostedKafkaEvent as the messenger's outbox puts it on the wire, `atSeconds` after T0. */
function posted(chatId: string, p: { sender?: string; to: string[]; requests?: string[]; atSeconds: number; seq?: number }, partition?: number): Message {
  const payload = {
    ChatId: chatId,
    MessageId: newId(),
    Seq: p.seq ?? 1,
    SenderUserId: p.sender ?? newId(),
    RecipientUserIds: p.to,
    RequestUserIds: p.requests ?? [],
    Kind: 'Text',
    SentAt: new Date(T0 + p.atSeconds * 1000).toISOString(),
  };
  const headers = { 'message-id': newId(), 'event-type': 'MessagePostedKafkaEvent', 'contract-version': '1', 'aggregate-type': 'Chat', 'aggregate-id': chatId,
    'occurred-at': payload.SentAt };
  return { key: chatId, value: JSON.stringify(payload), headers, ...(partition === undefined ? {} : { partition }) };
}

const inApp = async (userId: string) =>
  (
    await a.pool.query<{ id: string; version: number; status: string }>(
      `select id, version, status from notifications.notifications where recipient_user_id = $1 and channel = 'InApp' order by id`,
      [userId],
    )
  ).rows;

/** Produces the events, then a marker message of the same chat (same partition, after them) and waits for it: the events are handled. */
async function deliver(chatId: string, events: Message[], partition?: number): Promise<void> {
  const marker = newId();
  await k.produce(topic, [...events, posted(chatId, { to: [marker], atSeconds: 0 }, partition)]);
  await waitFor('the chat handled up to its marker', async () => (await inApp(marker)).length === 1, 30_000);
}

describe('message notifications per chat and recipient (the offline path)', () => {
  test('a member for whom the chat is a message request gets one notification of it until they accept', async () => {
    const chatId = newId();
    const [asked, member] = [newId(), newId()];
    const to = [asked, member];
    // Minutes apart: the window lets the member's every message through, only the request rule holds.
    await deliver(chatId, [0, 120, 240].map((s, i) => posted(chatId, { to, requests: [asked], atSeconds: s, seq: i + 1 })));
    assert.equal((await inApp(member)).length, 3);
    assert.equal((await inApp(asked)).length, 1, 'a message request notifies once');

    // Accepted (no longer in RequestUserIds): the chat notifies as any other.
    await deliver(chatId, [posted(chatId, { to, requests: [], atSeconds: 360, seq: 4 })]);
    assert.equal((await inApp(asked)).length, 2);
  });

  test("a chat's messages within the window fold into its unread notification; reading it or the window's end lets the next one through", async () => {
    const chatId = newId();
    const reader = newId();
    const to = [reader];
    await deliver(chatId, [0, 10, 30].map((s, i) => posted(chatId, { to, atSeconds: s, seq: i + 1 })));
    assert.equal((await inApp(reader)).length, 1, 'messages 10 and 30 s later fold into the first notification');
    // Read once delivered (the dispatcher's Sent bumps its version).
    await waitFor('the notification delivered', async () => (await inApp(reader))[0]!.status === 'Sent');
    const [first] = await inApp(reader);

    const res = await a.app.inject({
      method: 'POST',
      url: `/api/notifications/${first!.id}/read`,
      headers: { authorization: `Bearer ${await a.userToken(reader)}` },
      payload: { version: first!.version },
    });
    assert.equal(res.statusCode, 200);
    await deliver(chatId, [40, 50].map((s, i) => posted(chatId, { to, atSeconds: s, seq: i + 4 })));
    assert.equal((await inApp(reader)).length, 2, 'read: the next message notifies, the one after it folds into that one');

    await deliver(chatId, [posted(chatId, { to, atSeconds: 40 + 61, seq: 6 })]);
    assert.equal((await inApp(reader)).length, 3, 'past the window since the unread notification: the next message notifies');
  });

  test("one message's notifications for 400 offline recipients, each with a device: an in-app copy and a push each, written together", async () => {
    const chatId = newId();
    const users = Array.from({ length: 400 }, () => newId());
    await a.pool.query(
      `insert into notifications.push_tokens (token, user_id, platform, created_at, updated_at)
       select 'device-' || u, u, 'ios', now(), now() from unnest($1::uuid[]) u`,
      [users],
    );
    await deliver(chatId, [posted(chatId, { to: users, atSeconds: 0 })]);
    const { rows } = await a.pool.query<{ channel: string; n: number; recipients: number; addressed: number }>(
      `select channel, count(*)::int as n, count(distinct recipient_user_id)::int as recipients,
              count(*) filter (where recipient_address = 'device-' || recipient_user_id)::int as addressed
         from notifications.notifications where recipient_user_id = any($1::uuid[]) group by channel order by channel`,
      [users],
    );
    assert.deepEqual(rows, [
      { channel: 'InApp', n: 400, recipients: 400, addressed: 0 },
      { channel: 'Push', n: 400, recipients: 400, addressed: 400 },
    ]);
  });

  test('one user floods a 400-member group that never accepted at the send limit: one notification each, and an unrelated one still arrives', async () => {
    const group = newId();
    const members = Array.from({ length: 400 }, () => newId());
    const flooder = newId();
    // MESSENGER_RATE_LIMIT_MESSAGE_SENDS_PER_MINUTE (300) in its minute, all to one partition.
    const flood = Array.from({ length: 300 }, (_, i) => posted(group, { sender: flooder, to: members, requests: members, atSeconds: i * 0.2, seq: i + 1 }, 0));
    for (let i = 0; i < flood.length; i += 20) await k.produce(topic, flood.slice(i, i + 20));
    const [bob, carol] = [newId(), newId()];
    await k.produce(topic, [posted(newId(), { sender: bob, to: [carol], atSeconds: 60 }, 1)]);
    await waitFor("Carol's notification from Bob", async () => (await inApp(carol)).length === 1, 30_000);

    await deliver(group, [], 0);
    const { rows } = await a.pool.query<{ n: number; recipients: number }>(
      `select count(*)::int as n, count(distinct recipient_user_id)::int as recipients from notifications.notifications
        where recipient_user_id = any($1::uuid[]) and channel = 'InApp'`,
      [members],
    );
    assert.deepEqual(rows[0], { n: 400, recipients: 400 }, '300 messages to 400 members who never accepted: one notification each');
  });
});
