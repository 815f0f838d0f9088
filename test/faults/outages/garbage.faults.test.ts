import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Message } from 'kafkajs';
import { EVENT_TOPICS, TOPICS } from '../../../src/event-topics.ts';
import { createTestDatabase } from '../../support/db.ts';
import { createTestKafka } from '../../support/kafka.ts';
import { waitFor } from '../../support/wait.ts';
import { sampleOf, seeded, startFaultService } from './support.ts';

/**
 * Garbage on every topic a consumer of the service reads: each bad message is dead-lettered with
 * its code (a foreign event type is acknowledged and skipped, as topics are shared), and a valid
 * message behind them on the same partition is still applied; the process never goes down.
 */

/** Per consumed topic: a valid event, the check that it was applied, and the code of a payload of wrong types. */
interface TopicCase {
  eventType: string;
  payloadCode: string;
  valid(): { key: string; payload: object };
  applied(key: string): string;
}

/** The broker's default message.max.bytes (1 MiB + 12): the largest record batch a topic takes. */
const BROKER_MAX_BYTES = 1_048_588;

const CASES: Record<string, TopicCase> = {
  [TOPICS.identityUsers]: {
    eventType: 'UserUpsertedKafkaEvent',
    payloadCode: 'MSG_USER_SYNC_INVALID_PAYLOAD',
    valid: () => {
      const UserId = randomUUID();
      const payload = { UserId, Name: { FirstName: 'Ok', MiddleName: null, LastName: 'User' }, PhoneNumber: '+79921234567', Status: 'Active', Version: 1, Type: 'Investor', CompanyId: null };
      return { key: UserId, payload };
    },
    applied: (key) => `select count(*)::int as n from messenger.users where id = '${key}'`,
  },
  [TOPICS.propertyObjectViewEnded]: {
    eventType: 'PropertyObjectViewEndedKafkaEvent',
    payloadCode: 'USER_ACTIVITY_VIEW_ENDED_INVALID_PAYLOAD',
    valid: () => {
      const PropertyObjectViewId = randomUUID();
      return { key: PropertyObjectViewId, payload: { PropertyObjectViewId, PropertyObjectId: randomUUID(), DurationSeconds: 42 } };
    },
    applied: (key) => `select count(*)::int as n from user_activity.counted_property_object_views where property_object_view_id = '${key}'`,
  },
  [TOPICS.messagePosted]: {
    eventType: 'MessagePostedKafkaEvent',
    payloadCode: 'NTF_MESSAGE_POSTED_INVALID',
    valid: () => {
      const ChatId = randomUUID();
      const payload = { ChatId, MessageId: randomUUID(), Seq: 1, SenderUserId: randomUUID(), RecipientUserIds: [ChatId], Kind: 'Text', SentAt: new Date().toISOString() };
      return { key: ChatId, payload };
    },
    // The recipient (offline) gets an in-app notification; the ChatId doubles as the recipient id.
    applied: (key) => `select count(*)::int as n from notifications.notifications where recipient_user_id = '${key}'`,
  },
};

const headersOf = (eventType: string, aggregateId: string, over: Record<string, string> = {}) => ({
  'message-id': randomUUID(),
  'event-type': eventType,
  'contract-version': '1',
  'aggregate-type': 'Fault',
  'aggregate-id': aggregateId,
  'occurred-at': new Date().toISOString(),
  ...over,
});

/** The garbage for one topic, each with the dlq-code it must be dead-lettered with (null: skipped). */
function garbage(c: TopicCase): { what: string; message: Message; code: string | null }[] {
  const id = randomUUID();
  const headers = headersOf(c.eventType, id);
  // Just under the broker's limit with its headers: its DLQ copy, with the dlq-* headers added, is not.
  const hugeValue = JSON.stringify({ Pad: 'x'.repeat(BROKER_MAX_BYTES - 450) });
  return [
    { what: 'not JSON', message: { key: id, value: '{"UserId": nope', headers }, code: 'ENVELOPE_INVALID_JSON' },
    { what: 'no headers', message: { key: id, value: JSON.stringify(c.valid().payload) }, code: 'ENVELOPE_MISSING_HEADER' },
    { what: 'wrong header types', message: { key: id, value: '{}', headers: headersOf(c.eventType, id, { 'contract-version': 'one', 'occurred-at': 'yesterday' }) }, code: 'ENVELOPE_INVALID_HEADER' },
    { what: 'empty value', message: { key: id, value: null, headers: headersOf(c.eventType, id) }, code: 'ENVELOPE_EMPTY_VALUE' },
    { what: 'wrong payload types', message: { key: id, value: JSON.stringify({ UserId: 7, PropertyObjectViewId: [], ChatId: {}, Seq: 'x', DurationSeconds: 'long' }), headers: headersOf(c.eventType, id) }, code: c.payloadCode },
    { what: 'a JSON array', message: { key: id, value: '[1,2,3]', headers: headersOf(c.eventType, id) }, code: c.payloadCode },
    { what: 'huge value', message: { key: id, value: hugeValue, headers: headersOf(c.eventType, id) }, code: c.payloadCode },
    { what: 'foreign event type', message: { key: id, value: '{}', headers: headersOf('SomethingElseHappenedEvent', id) }, code: null },
  ];
}

test('garbage on every consumed topic: each message dead-lettered with its code, the partition moves on, the process stays up', async (t) => {
  const rng = seeded('garbage', t);
  const kafka = await createTestKafka();
  const database = await createTestDatabase();
  const consumed = EVENT_TOPICS.filter((t) => t.consumed).map((t) => t.name);
  assert.deepEqual(new Set(consumed), new Set(Object.keys(CASES)), 'a case for every consumed topic of the catalogue');
  const service = await startFaultService({
    DATABASE_URL: database.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    KAFKA_TOPIC_PREFIX: kafka.prefix,
  }, { kernel: { kafkaTopicPartitions: 1 } }); // one partition: every message of a topic queues behind the garbage
  await waitFor('the event bus up', async () => (await service.ready()).dependencies.eventBus === 'ok', 30_000);

  let expected = 0;
  let seen = 0;
  let duplicated = 0;
  for (const topic of consumed) {
    const c = CASES[topic]!;
    // A seeded shuffle of the garbage, the valid event last on the partition.
    const bad = garbage(c).map((g) => ({ g, r: rng.int(0, 1e9) })).sort((a, b) => a.r - b.r).map((x) => x.g);
    const valid = c.valid();
    for (const g of bad) await kafka.produce(kafka.topic(topic), [g.message]);
    await kafka.produce(kafka.topic(topic), [{ key: valid.key, value: JSON.stringify(valid.payload), headers: headersOf(c.eventType, valid.key) }]);

    const count = async () => (await database.pool.query<{ n: number }>(c.applied(valid.key))).rows[0]!.n;
    await waitFor(`${topic}: the valid event behind the garbage applied`, async () => (await count()) > 0, 60_000);
    const lettered = bad.filter((g) => g.code !== null);
    const dlq = await kafka.readTopic(kafka.topic(`${topic}.dlq`), { atLeast: lettered.length, timeoutMs: 30_000 });
    const codeAt = new Map(dlq.map((m) => [Number(m.headers['dlq-origin-offset']), m.headers['dlq-code']]));
    bad.forEach((g, offset) => assert.equal(codeAt.get(offset) ?? null, g.code, `${topic}: ${g.what} (offset ${offset})`));
    // Too large for the DLQ with its dlq-* headers: a stripped copy saying how much was left out.
    const huge = dlq.find((m) => Number(m.headers['dlq-origin-offset']) === bad.findIndex((g) => g.what === 'huge value'))!;
    assert.equal(huge.value, null, `${topic}: the huge value is not copied`);
    assert.ok(Number(huge.headers['dlq-dropped-bytes']) > BROKER_MAX_BYTES - 1000, `${topic}: dlq-dropped-bytes ${huge.headers['dlq-dropped-bytes']}`);
    expected += lettered.length;
    seen += codeAt.size;
    duplicated += dlq.length - codeAt.size;
    rng.report({ expected, seen, duplicated });
  }
  const { text } = await service.metrics();
  assert.equal(sampleOf(text, 'consumer_dlq_total'), expected, 'every dead letter counted');
  assert.ok(sampleOf(text, 'consumer_messages_total', { outcome: 'skipped' }) >= consumed.length, 'foreign event types skipped');
  service.assertAlive();
  assert.equal((await service.ready()).status, 200);
});
