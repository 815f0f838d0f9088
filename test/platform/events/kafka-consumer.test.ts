import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Message } from 'kafkajs';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { testKafkaClient, createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { createEffectsTable, effects, recordEffect, testLog } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import type { ConsumerDefinition } from '../../../src/platform/events/bus.ts';
import { envelopeToWire, type EventEnvelope } from '../../../src/platform/events/envelope.ts';
import { PoisonMessageError } from '../../../src/platform/events/errors.ts';
import { topicsToCreate } from '../../../src/platform/events/topics.ts';
import { newId } from '../../../src/platform/time.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

// At the top level: the cleanup hooks these register run when the file ends.
const t: TestDatabase = await createTestDatabase();
const k: TestKafka = await createTestKafka();
const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'consumer-test', log: testLog });
await bus.start();
after(() => bus.stop());
await createEffectsTable(t.pool);

type UserPayload = { UserId: string; Step: number; Poison?: boolean };

const envelope = (topic: string, key: string, step: number, over: Partial<EventEnvelope<UserPayload>> = {}): EventEnvelope<UserPayload> => ({
  messageId: newId(),
  topic,
  key,
  eventType: 'UserUpsertedKafkaEvent',
  contractVersion: 1,
  aggregateType: 'User',
  aggregateId: key,
  occurredAt: new Date().toISOString(),
  payload: { UserId: key, Step: step },
  ...over,
});

/** A raw message on an explicit partition, so the test controls what shares a partition. */
const onPartition = (partition: number, e: EventEnvelope<UserPayload>): Message => ({ partition, ...envelopeToWire(e) });

/** Creates the topic and its DLQ twin the way the service does, and starts a consumer on it. */
async function consumerOn(topic: string, def: Omit<ConsumerDefinition<UserPayload>, 'topic' | 'groupId' | 'eventTypes'> & { eventTypes?: string[] }) {
  await bus.ensureTopics(topicsToCreate([{ name: topic, partitions: 3, consumed: true }], { prefix: k.prefix }));
  const registry = new Registry();
  const handle = await bus.subscribe(
    { topic, groupId: `${def.name}-group`, eventTypes: ['UserUpsertedKafkaEvent'], ...def } as ConsumerDefinition,
    { db: t.db, log: testLog, registry, topicPrefix: k.prefix },
  );
  after(() => handle.stop());
  const count = (outcome: string) => metricValue(registry, 'consumer_messages_total', { outcome });
  return { handle, registry, count };
}

describe('consumer runner on Kafka', () => {
  test('a redelivered message (same message-id twice) is handled once; the offset is committed after handling', async () => {
    const topic = 'pin.test.redelivery.v1';
    const handled: string[] = [];
    const c = await consumerOn(topic, { name: 'redelivery', handle: async (e) => void handled.push(e.messageId) });
    const first = envelope(topic, 'user-1', 1);
    const second = envelope(topic, 'user-1', 2);
    const wire = (e: EventEnvelope<UserPayload>) => ({ topic: k.topic(topic), ...envelopeToWire(e) });

    await bus.publish([wire(first)]);
    await bus.publish([wire(first), wire(second)]);

    await waitFor('two handled, one duplicate', async () => (await c.count('handled')) === 2 && (await c.count('duplicate')) === 1);
    assert.deepEqual(handled, [first.messageId, second.messageId]);
    const { rows } = await t.pool.query(`select idempotency_key from platform.inbox where consumer = 'redelivery' order by 1`);
    assert.deepEqual(rows.map((r) => r.idempotency_key), [`redelivery:${first.messageId}`, `redelivery:${second.messageId}`].sort());
    await waitFor('all three offsets committed', async () => {
      const [offsets] = await k.admin.fetchOffsets({ groupId: `${k.prefix}redelivery-group`, topics: [k.topic(topic)] });
      return offsets!.partitions.reduce((n, p) => n + Math.max(0, Number(p.offset)), 0) === 3;
    });
    assert.equal(await metricValue(c.registry, 'consumer_handle_duration_seconds', {}, 'consumer_handle_duration_seconds_count'), 2, 'one handler run per handled message');
    assert.equal(await metricValue(c.registry, 'consumer_lag', { consumer: 'redelivery' }), 0);
  });

  test('poison goes to the DLQ with code and origin headers, and the partition moves on', async () => {
    const topic = 'pin.test.poison.v1';
    const handled: number[] = [];
    const c = await consumerOn(topic, {
      name: 'poison',
      handle: async (e) => {
        if (e.payload.Poison) throw new PoisonMessageError('USER_PAYLOAD_INVALID', 'UserId is not a UUID');
        handled.push(e.payload.Step);
      },
    });
    const declared = envelope(topic, 'user-2', 2, { payload: { UserId: 'user-2', Step: 2, Poison: true } });
    await k.produce(k.topic(topic), [
      { partition: 0, key: 'user-1', value: 'not an envelope' }, // no headers at all
      onPartition(0, declared),
      onPartition(0, envelope(topic, 'user-3', 3)),
    ]);

    await waitFor('two dead-lettered, one handled', async () => handled.length === 1 && (await c.count('dead_lettered')) === 2);
    assert.deepEqual(handled, [3], 'the message after the poison ones on the same partition is handled');
    const dlq = await k.readTopic(`${k.topic(topic)}.dlq`, { atLeast: 2 });
    assert.equal(dlq.length, 2);
    const [unreadable, byHandler] = dlq.sort((a, b) => Number(a.headers['dlq-origin-offset']) - Number(b.headers['dlq-origin-offset']));
    assert.deepEqual(
      { ...unreadable!.headers, 'dlq-reason': undefined },
      { 'dlq-code': 'ENVELOPE_MISSING_HEADER', 'dlq-reason': undefined, 'dlq-origin-topic': k.topic(topic), 'dlq-origin-partition': '0', 'dlq-origin-offset': '0', 'dlq-consumer': 'poison' },
    );
    assert.equal(unreadable!.value?.toString(), 'not an envelope', 'original value kept');
    assert.equal(unreadable!.key, 'user-1');
    assert.equal(byHandler!.headers['dlq-code'], 'USER_PAYLOAD_INVALID');
    assert.equal(byHandler!.headers['dlq-reason'], 'UserId is not a UUID');
    assert.equal(byHandler!.headers['dlq-origin-offset'], '1');
    assert.equal(byHandler!.headers['message-id'], declared.messageId, 'original headers kept');
    assert.equal(await metricValue(c.registry, 'consumer_dlq_total', { consumer: 'poison', code: 'ENVELOPE_MISSING_HEADER', topic }), 1);
    assert.equal(await metricValue(c.registry, 'consumer_dlq_total', { consumer: 'poison', code: 'USER_PAYLOAD_INVALID' }), 1);
    const { rows } = await t.pool.query(`select 1 from platform.inbox where idempotency_key = $1`, [`poison:${declared.messageId}`]);
    assert.equal(rows.length, 1, 'the dead-lettered message is in the inbox: a redelivery before the offset commit is a duplicate, not a second dead letter');
  });

  test('a foreign event type is acknowledged and skipped, never dead-lettered; another contract version is processed', async () => {
    const topic = 'pin.test.shared.v1';
    const handled: number[] = [];
    const c = await consumerOn(topic, { name: 'shared', handle: async (e) => void handled.push(e.payload.Step) });
    await k.produce(k.topic(topic), [
      onPartition(1, envelope(topic, 'user-1', 1, { eventType: 'UserBlockedKafkaEvent' })),
      onPartition(1, envelope(topic, 'user-1', 2, { contractVersion: 2 })),
    ]);

    // The metrics follow the handler's commit: wait for them, not for the handler's own push.
    const mismatches = () => metricValue(c.registry, 'consumer_contract_version_mismatch_total', { consumer: 'shared' });
    await waitFor('one skipped, one handled', async () => handled.length === 1 && (await c.count('skipped')) === 1 && (await mismatches()) === 1);
    assert.deepEqual(handled, [2]);
    assert.equal(await mismatches(), 1);
    assert.equal(await c.count('dead_lettered'), 0);
    assert.equal((await k.readTopic(`${k.topic(topic)}.dlq`)).length, 0);
  });

  test('an infrastructure error is retried after backoff in partition order while other partitions keep flowing', async () => {
    const topic = 'pin.test.retry.v1';
    const succeeded: string[] = [];
    let failuresLeft = 2;
    const c = await consumerOn(topic, {
      name: 'retry',
      backoff: { baseMs: 300, factor: 2, capMs: 600, jitter: 0.2 },
      handle: async (e, tx) => {
        const label = `${e.key}#${e.payload.Step}`;
        if (label === 'A#2' && failuresLeft > 0) {
          failuresLeft -= 1;
          throw new Error('database is restarting');
        }
        await recordEffect(tx, 'retry', label);
        succeeded.push(label);
      },
    });
    // A#1..A#3 share partition 0 and arrive together, so they meet in one batch and transaction.
    await k.produce(k.topic(topic), [
      onPartition(0, envelope(topic, 'A', 1)),
      onPartition(0, envelope(topic, 'A', 2)),
      onPartition(0, envelope(topic, 'A', 3)),
      onPartition(1, envelope(topic, 'D', 1)),
    ]);

    await waitFor('all four handled', async () => (await effects(t.pool, 'retry')).length === 4);
    const committed = await effects(t.pool, 'retry');
    assert.deepEqual(committed.filter((l) => l.startsWith('A#')), ['A#1', 'A#2', 'A#3'], 'partition order kept, each effect once');
    assert.ok(succeeded.indexOf('D#1') < succeeded.lastIndexOf('A#2'), `partition 1 did not wait for partition 0: ${succeeded.join(', ')}`);
    assert.equal(await c.count('retried'), 2);
    assert.equal(await c.count('handled'), 4);
  });

  test('a stopped consumer handles nothing more, and a new member of its group resumes after the committed offset', async () => {
    const topic = 'pin.test.stop.v1';
    const handled: number[] = [];
    const def = { name: 'stopper', handle: async (e: EventEnvelope<UserPayload>) => void handled.push(e.payload.Step) };
    const first = await consumerOn(topic, def);
    await k.produce(k.topic(topic), [onPartition(2, envelope(topic, 'u', 1))]);
    await waitFor('first message handled', () => handled.length === 1);
    await first.handle.stop();

    await k.produce(k.topic(topic), [onPartition(2, envelope(topic, 'u', 2))]);
    const second = await consumerOn(topic, def);
    await waitFor('second message handled by the new member', () => handled.length === 2);
    assert.deepEqual(handled, [1, 2], 'the first message was not handled again');
    assert.equal(await second.count('duplicate'), 0);
  });
});
