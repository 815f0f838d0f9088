import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineConsumer, type ConsumerDefinition } from '../../../src/platform/events/bus.ts';
import { resolveConsumer } from '../../../src/platform/events/consumer-definition.ts';
import { deadLetterSource } from '../../../src/platform/events/dead-letter-source.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { PoisonMessageError } from '../../../src/platform/events/errors.ts';
import { signToken } from '../../../src/platform/http/auth.ts';
import { defineModule } from '../../../src/platform/module.ts';
import { enqueue } from '../../../src/platform/outbox/index.ts';
import { newId, systemClock } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';
import { testKafkaClient, createTestKafka } from '../../support/kafka.ts';
import { waitFor } from '../../support/wait.ts';
import { closedPort, createEffectsTable, effects, recordEffect, testLog } from '../events/support.ts';
import { orderEvent } from '../outbox/support.ts';

/**
 * Replaying dead letters from the ops console, on the real broker (runbook ConsumerDeadLettered):
 * a message the consumer refused is dead-lettered (its inbox row written); once the cause is
 * fixed, a dry run counts it, the replay publishes the original again to its origin topic with its
 * message id and without the dlq-* headers, after deleting the consumer's inbox row, and the
 * consumer handles it. A replayed dead letter is listed no more and a second replay changes nothing;
 * a replay whose publish the broker never takes changes nothing at all.
 */

const k = await createTestKafka();
const TOPIC = 'pin.test.replay.v1';
await k.createTopics([
  { name: TOPIC, partitions: 1 },
  { name: `${TOPIC}.dlq`, partitions: 1 },
]);

/** Refuses order 2 while `broken` (the cause on-call fixes), records every other order in its transaction. */
let broken = true;
const consumer: ConsumerDefinition<{ Seq: number }> = defineConsumer({
  name: 'replay-test',
  topic: TOPIC,
  groupId: 'replay-test',
  eventTypes: ['OrderChangedKafkaEvent'],
  async handle(event, tx) {
    if (broken && event.payload.Seq === 2) throw new PoisonMessageError('TEST_BROKEN', 'order 2 refused until the fix');
    await recordEffect(tx, 'replay-test', String(event.payload.Seq));
  },
});

const t = await buildTestApp(
  { KAFKA_BROKERS: k.brokers.join(','), KAFKA_TOPIC_PREFIX: k.prefix, JOBS_ENABLED: 'true', OUTBOX_POLLING_INTERVAL: '200ms' },
  { modules: [defineModule({}, () => ({ name: 'replay-test', consumers: [consumer] }))], tuning: { opsDlqFreshMs: 0, opsBulkPauseMs: 10 } },
);
await createEffectsTable(t.database.pool);
await t.app.platform.startBackground();
const operator = await t.token({ admin: true });
const viewer = await signToken({ userId: newId(), admin: false, opsRole: 'viewer' }, t.config.JWT_SECRET, { issuer: t.config.AUTH_ISSUER, audience: t.config.AUTH_AUDIENCE });

async function call<T>(token: string, method: 'GET' | 'POST', url: string, payload?: object): Promise<{ status: number; body: T }> {
  const res = await t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload }) });
  return { status: res.statusCode, body: res.json() as T };
}

type Row = { id: string; fields: Record<string, string | null> };
const kind = 'consumer-dead-letters';
const listed = async () => (await call<{ total: number; items: Row[] }>(viewer, 'GET', `/api/ops/failures/${kind}?field=originTopic&value=${k.topic(TOPIC)}`)).body;
const filter = { field: 'originTopic', value: k.topic(TOPIC) };

async function replayed(auditId: string): Promise<{ status: string; changed: number }> {
  let entry = { status: 'running', changed: 0 };
  await waitFor('the bulk replay to end', async () => {
    entry = (await call<{ status: string; changed: number }>(operator, 'GET', `/api/ops/audit/${auditId}`)).body;
    return entry.status !== 'running';
  });
  return entry;
}

test('a dead letter replayed once its cause is fixed is handled by its consumer, listed no more, and not replayed twice', { timeout: 120_000 }, async () => {
  await t.database.db.transaction((tx) => enqueue(tx, [orderEvent(TOPIC, 'o', 1), orderEvent(TOPIC, 'o', 2), orderEvent(TOPIC, 'o', 3)]));
  await waitFor('orders 1 and 3 handled', async () => (await effects(t.database.pool, 'replay-test')).length >= 2, 60_000);
  const [dead] = await k.readTopic(k.topic(`${TOPIC}.dlq`), { atLeast: 1, timeoutMs: 30_000 });
  assert.equal(dead!.headers['dlq-consumer'], 'replay-test', 'the dead letter names the consumer that refused it');
  const messageId = dead!.headers['message-id']!;
  const inbox = () => t.database.pool.query(`select 1 from platform.inbox where consumer = 'replay-test' and idempotency_key = $1`, [`replay-test:${messageId}`]);
  assert.equal((await inbox()).rowCount, 1, 'dead-lettered with its inbox row');
  assert.equal((await listed()).total, 1);

  const viewerTry = await call<{ code: string }>(viewer, 'POST', `/api/ops/failures/${kind}/actions`, { action: 'replay', filter, dryRun: false });
  assert.deepEqual([viewerTry.status, viewerTry.body.code], [403, 'OPS_READ_ONLY']);
  const dry = await call<{ matched: number; wouldChange: number; sample: Row[] }>(operator, 'POST', `/api/ops/failures/${kind}/actions`, { action: 'replay', filter });
  assert.deepEqual([dry.status, dry.body.matched, dry.body.wouldChange, dry.body.sample.map((r) => r.fields.messageId)], [200, 1, 1, [messageId]]);
  assert.deepEqual(await effects(t.database.pool, 'replay-test'), ['1', '3'], 'a dry run replays nothing');

  broken = false;
  const run = await call<{ auditId: string }>(operator, 'POST', `/api/ops/failures/${kind}/actions`, { action: 'replay', filter, dryRun: false });
  assert.equal(run.status, 202);
  const done = await replayed(run.body.auditId);
  assert.deepEqual([done.status, done.changed], ['done', 1]);
  await waitFor('the replayed order handled', async () => (await effects(t.database.pool, 'replay-test')).includes('2'), 60_000);
  assert.deepEqual(await effects(t.database.pool, 'replay-test'), ['1', '3', '2']);

  const origin = await k.readTopic(k.topic(TOPIC), { atLeast: 4, timeoutMs: 30_000 });
  const again = origin[3]!;
  assert.equal(again.headers['message-id'], messageId, 'the original, with its message id');
  assert.deepEqual(Object.keys(again.headers).filter((h) => h.startsWith('dlq-')), []);
  assert.equal(JSON.parse(again.value!.toString()).Seq, 2);

  assert.equal((await listed()).total, 0, 'a replayed dead letter is listed no more');
  const second = await call<{ auditId: string; matched: number }>(operator, 'POST', `/api/ops/failures/${kind}/actions`, { action: 'replay', filter, dryRun: false });
  assert.equal(second.body.matched, 0);
  assert.equal((await replayed(second.body.auditId)).changed, 0);
  const replays = await t.database.pool.query(`select actor from platform.dead_letter_replays where dead_letter_id = $1`, [`${k.topic(`${TOPIC}.dlq`)}/0/0`]);
  assert.equal(replays.rowCount, 1);
  assert.equal((await k.readTopic(k.topic(TOPIC), { atLeast: 4, timeoutMs: 5_000 })).length, 4, 'published once');
});

test('a replay whose publish cannot reach the broker changes nothing: the inbox row stays, the record stays listed and unclaimed', { timeout: 120_000 }, async () => {
  // A dead letter as the consumer runner writes it, of a message whose inbox row is there.
  const messageId = newId();
  await k.produce(k.topic(`${TOPIC}.dlq`), [
    {
      key: 'o',
      value: JSON.stringify({ OrderId: 'o', Seq: 9 }),
      headers: {
        'message-id': messageId,
        'event-type': 'OrderChangedKafkaEvent',
        'contract-version': '1',
        'aggregate-type': 'Order',
        'aggregate-id': 'o',
        'occurred-at': new Date().toISOString(),
        'dlq-code': 'TEST_BROKEN',
        'dlq-reason': 'refused',
        'dlq-origin-topic': k.topic(TOPIC),
        'dlq-origin-partition': '0',
        'dlq-origin-offset': '99',
        'dlq-consumer': 'replay-test',
      },
    },
  ]);
  const key = `replay-test:${messageId}`;
  await t.database.pool.query(`insert into platform.inbox (idempotency_key, consumer) values ($1, 'replay-test')`, [key]);
  const unreachable = createKafkaBus({ client: testKafkaClient, brokers: [`127.0.0.1:${await closedPort()}`], clientId: 'replay-dead', log: testLog, connectionTimeoutMs: 200, requestTimeoutMs: 1000 });
  const source = deadLetterSource({
    topics: () => [k.topic(`${TOPIC}.dlq`)],
    openReader: (topic, group) => t.app.platform.bus.openTopicReader!(topic, group),
    groupPrefix: `${k.prefix}replay-dead`,
    keepPerTopic: 100,
    freshMs: 0,
    log: testLog,
    db: t.database.db,
    clock: systemClock,
    consumers: [resolveConsumer(consumer, k.prefix)],
    publish: (messages) => unreachable.publish(messages),
  });
  const only = { field: 'messageId', value: messageId };
  try {
    assert.equal(await source.count(only), 1);
    await assert.rejects(source.act('replay', only, 10, 'on-call'));
  } finally {
    await unreachable.stop();
  }
  assert.equal((await t.database.pool.query(`select 1 from platform.inbox where idempotency_key = $1`, [key])).rowCount, 1, 'the inbox row is kept');
  assert.equal((await t.database.pool.query(`select 1 from platform.dead_letter_replays where actor = 'on-call'`)).rowCount, 0, 'no replay claimed');
  assert.equal(await source.count(only), 1, 'still listed, to replay once the broker is back');
});
