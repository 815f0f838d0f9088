import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'drizzle-orm';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { testKafkaClient, createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { startTcpProxy } from '../../support/tcp-proxy.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';
import { createEffectsTable, effects, labelledMessage, recordEffect, testLog, type LabelPayload } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { createDb, createPool } from '../../../src/platform/db/index.ts';
import type { ConsumerDefinition, OutgoingMessage } from '../../../src/platform/events/bus.ts';
import { countsAsAttempt } from '../../../src/platform/events/consumer-failures.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';
import { envelopeToWire, type EventEnvelope } from '../../../src/platform/events/envelope.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { topicsToCreate } from '../../../src/platform/events/topics.ts';
import { newId } from '../../../src/platform/time.ts';

/**
 * Poison never holds its partition forever: poison that is not a data error (a TypeError, a unique violation the same
 * message hits every time) held its partition forever. After maxAttempts failed attempts in a row
 * the message is dead-lettered as CONSUMER_RETRIES_EXHAUSTED with the last error's class, recorded
 * in the inbox, and the partition moves on. An outage (here: the database unreachable through a
 * TCP proxy) never counts, so a database restart cannot dead-letter healthy messages.
 */

const t: TestDatabase = await createTestDatabase();
await createEffectsTable(t.pool);
const k: TestKafka = await createTestKafka();
const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'retries-test', log: testLog, consumerMaxAttempts: 4 });
await bus.start();
after(() => bus.stop());
await t.pool.query(`create table public.test_unique_labels (label text primary key)`);

const label = (e: EventEnvelope) => (e.payload as LabelPayload).Label;

function processor(name: string, maxAttempts: number, handle: ConsumerDefinition['handle']) {
  const deadLetters: OutgoingMessage[] = [];
  const registry = new Registry();
  const p = createMessageProcessor(resolveConsumer({ name, topic: 'pin.test.v1', groupId: name, eventTypes: ['E'], maxAttempts, handle }), {
    db: t.db,
    log: testLog,
    metrics: consumerMetrics(registry),
    publish: async (m) => void deadLetters.push(...m),
  });
  return { p, deadLetters, registry };
}

/** Message ids unique per test: the inbox dedupes across processors. */
const message = (name: string, l: string) => labelledMessage(l, { messageId: `${name}-${l}` });

const inboxKeys = async (consumer: string) =>
  (await t.pool.query(`select idempotency_key from platform.inbox where consumer = $1 order by 1`, [consumer])).rows.map((r) => r.idempotency_key as string);

describe('consumer runner: retries exhausted', () => {
  test('a handler throwing TypeError on one message: retried maxAttempts − 1 times, then dead-lettered with the code and class, recorded in the inbox; the next message is handled', async () => {
    const name = 'type-error';
    const { p, deadLetters, registry } = processor(name, 3, async (e, tx) => {
      if (label(e) === 'bad') (undefined as unknown as { x: number }).x = 1; // a real TypeError
      await recordEffect(tx, name, label(e));
    });
    const batch = [message(name, 'before'), message(name, 'bad'), message(name, 'after')];

    const first = await p.processBatch(batch);
    assert.equal(first.done, 1);
    assert.ok(first.error instanceof TypeError);
    assert.equal(first.attempt, 1);
    const second = await p.processBatch(batch.slice(1));
    assert.deepEqual([second.done, second.attempt], [0, 2]);
    assert.equal(deadLetters.length, 0, 'not before the last attempt');

    assert.deepEqual(await p.processBatch(batch.slice(1)), { done: 2 }, 'third attempt: dead-lettered, and the partition goes on');

    assert.deepEqual(await effects(t.pool, name), ['before', 'after']);
    assert.equal(deadLetters.length, 1);
    const h = deadLetters[0]!.headers;
    assert.equal(deadLetters[0]!.topic, 'pin.test.v1.dlq');
    assert.deepEqual(
      [h['dlq-code'], h['dlq-error-class'], h['dlq-attempts'], h['dlq-error-sqlstate'], h['message-id']],
      ['CONSUMER_RETRIES_EXHAUSTED', 'TypeError', '3', undefined, `${name}-bad`],
    );
    assert.doesNotMatch(String(h['dlq-reason']), /undefined|reading|setting/, 'the class, not the error message');
    assert.deepEqual(await inboxKeys(name), [`type-error:${name}-after`, `type-error:${name}-bad`, `type-error:${name}-before`]);
    assert.equal(await metricValue(registry, 'consumer_dlq_total', { consumer: name, code: 'CONSUMER_RETRIES_EXHAUSTED' }), 1);
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'dead_lettered' }), 1);

    // Redelivered (a crash before the offset commit): a duplicate, not a second dead letter.
    assert.deepEqual(await p.processBatch([batch[1]!]), { done: 1 });
    assert.equal(deadLetters.length, 1);
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'duplicate' }), 1);
  });

  test('a unique violation the message hits every time (23505) is dead-lettered with its SQLSTATE and constraint, never the driver message', async () => {
    const name = 'unique-forever';
    await t.pool.query(`insert into public.test_unique_labels values ('taken-value-42')`);
    const { p, deadLetters } = processor(name, 2, async (e, tx) => {
      await tx.execute(sql`insert into public.test_unique_labels values (${label(e) === 'dup' ? 'taken-value-42' : `${name}:${label(e)}`})`);
    });
    const dup = message(name, 'dup');
    assert.equal((await p.processBatch([dup])).attempt, 1);
    assert.deepEqual(await p.processBatch([dup, message(name, 'next')]), { done: 2 });
    const h = deadLetters[0]!.headers;
    assert.deepEqual([h['dlq-code'], h['dlq-error-class'], h['dlq-error-sqlstate']], ['CONSUMER_RETRIES_EXHAUSTED', 'DatabaseError', '23505']);
    assert.match(String(h['dlq-reason']), /SQLSTATE 23505 \(constraint test_unique_labels_pkey\)/);
    assert.doesNotMatch(JSON.stringify(h), /taken-value-42/);
  });

  test('an outage never counts: with the database unreachable every attempt fails, past maxAttempts nothing is dead-lettered, and the message is handled once it answers', async () => {
    const name = 'outage';
    // The processor's own pool goes through a TCP proxy that the test cuts and blocks.
    const proxy = await startTcpProxy(Number(new URL(t.url).port));
    const url = new URL(t.url);
    url.port = String(proxy.port);
    const pool = createPool(url.toString(), 2);
    after(() => pool.end());
    const deadLetters: OutgoingMessage[] = [];
    const p = createMessageProcessor(
      resolveConsumer({ name, topic: 'pin.test.v1', groupId: name, eventTypes: ['E'], maxAttempts: 2, handle: async (e, tx) => recordEffect(tx, name, label(e)) }),
      { db: createDb(pool), log: testLog, metrics: consumerMetrics(new Registry()), publish: async (m) => void deadLetters.push(...m) },
    );
    const m = message(name, 'm');
    proxy.block();
    proxy.cut();
    for (let attempt = 1; attempt <= 4; attempt++) {
      const result = await p.processBatch([m]);
      assert.deepEqual([result.done, result.attempt], [0, attempt], 'held, retried with a growing backoff');
      assert.equal(countsAsAttempt(result.error), false, `attempt ${attempt}: ${String(result.error)}`);
    }
    assert.equal(deadLetters.length, 0);
    proxy.unblock();
    assert.deepEqual(await p.processBatch([m]), { done: 1 });
    assert.equal(deadLetters.length, 0);
    assert.deepEqual(await effects(t.pool, name), ['m']);
  });
});

describe('consumer runner on Kafka: retries exhausted', () => {
  test('a message whose handler always throws TypeError reaches <topic>.dlq after the bus default maxAttempts with code and class; the next message of the partition is handled', async () => {
    const topic = 'pin.test.retries.v1';
    await bus.ensureTopics(topicsToCreate([{ name: topic, partitions: 2, consumed: true }], { prefix: k.prefix }));
    const registry = new Registry();
    let badAttempts = 0;
    const handle = await bus.subscribe(
      {
        name: 'always-type-error',
        topic,
        groupId: 'always-type-error-group',
        eventTypes: ['E'],
        backoff: { baseMs: 20, factor: 2, capMs: 100, jitter: 0 },
        handle: async (e, tx) => {
          if (label(e) === 'bad') {
            badAttempts += 1;
            (null as unknown as { run(): void }).run();
          }
          await recordEffect(tx, 'always-type-error', label(e));
        },
      },
      { db: t.db, log: testLog, registry, topicPrefix: k.prefix },
    );
    after(() => handle.stop());
    const wire = (l: string) => ({
      partition: 1,
      ...envelopeToWire({ messageId: newId(), topic, key: 'k', eventType: 'E', contractVersion: 1, aggregateType: 'A', aggregateId: 'k', occurredAt: new Date().toISOString(), payload: { Label: l } }),
    });
    await k.produce(k.topic(topic), [wire('before'), wire('bad'), wire('after')]);

    await waitFor('the message after the poison one handled', async () => (await effects(t.pool, 'always-type-error')).length === 2, 20_000);
    assert.deepEqual(await effects(t.pool, 'always-type-error'), ['before', 'after']);
    assert.equal(badAttempts, 4, 'the default of the bus (consumerMaxAttempts) applies');
    const [letter, ...more] = await k.readTopic(`${k.topic(topic)}.dlq`, { atLeast: 1 });
    assert.equal(more.length, 0);
    assert.deepEqual(
      [letter!.headers['dlq-code'], letter!.headers['dlq-error-class'], letter!.headers['dlq-attempts'], letter!.headers['dlq-origin-partition'], letter!.headers['dlq-origin-offset']],
      ['CONSUMER_RETRIES_EXHAUSTED', 'TypeError', '4', '1', '1'],
    );
    assert.equal(await metricValue(registry, 'consumer_dlq_total', { consumer: 'always-type-error', code: 'CONSUMER_RETRIES_EXHAUSTED', topic }), 1);
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'retried' }), 3);
    await waitFor('offsets committed past all three', async () => {
      const [offsets] = await k.admin.fetchOffsets({ groupId: `${k.prefix}always-type-error-group`, topics: [k.topic(topic)] });
      return offsets!.partitions.find((p) => p.partition === 1)?.offset === '3';
    });
  });
});
