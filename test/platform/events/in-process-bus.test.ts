import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createEffectsTable, effects, jobContext, recordEffect, testLog } from './support.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { createEventBus } from '../../../src/platform/events/create-bus.ts';
import { envelopeToWire, type EventEnvelope } from '../../../src/platform/events/envelope.ts';
import { EventBusUnavailableError, PoisonMessageError } from '../../../src/platform/events/errors.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { createOutboxPublisher } from '../../../src/platform/outbox/publisher.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const t: TestDatabase = await createTestDatabase();
await createEffectsTable(t.pool);

const settings = { KAFKA_BROKERS: undefined, KAFKA_CLIENT_ID: 'x', KAFKA_TOPIC_PREFIX: '' };
const lines: { level: number; msg: string }[] = [];
const capturing = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) });
const bus = createEventBus(settings, { log: capturing, catalogue: [] });
await bus.start();
after(() => bus.stop());

type Payload = { ChatId: string; Seq: number; Bad?: boolean };

describe('in-process event bus (KAFKA_BROKERS unset)', () => {
  test('says loudly that Kafka is off, and reports health as disabled', async () => {
    assert.equal(bus.kind, 'in-process');
    assert.ok(lines.some((l) => l.level === 40 && /IN-PROCESS event bus/.test(l.msg)));
    assert.equal(await bus.health(), 'disabled');
  });

  test('delivers outbox events end to end through the consumer runner, in key order, deduping a redelivery', async () => {
    const topic = 'pin.messenger.message-posted.v1';
    const handled: EventEnvelope<Payload>[] = [];
    const registry = new Registry();
    await bus.subscribe(
      {
        name: 'in-process-e2e',
        topic,
        groupId: 'notifications',
        eventTypes: ['MessagePostedKafkaEvent'],
        handle: async (e: EventEnvelope<Payload>, tx) => {
          await tx.execute('select 1'); // runs inside the inbox transaction
          handled.push(e);
        },
      },
      { db: t.db, log: testLog, registry },
    );
    await t.db.transaction((tx) =>
      enqueue(
        tx,
        [1, 2, 3, 4].map((seq) => ({
          topic,
          eventType: 'MessagePostedKafkaEvent',
          aggregateType: 'Chat',
          aggregateId: seq % 2 ? 'chat-a' : 'chat-b',
          occurredAt: new Date(),
          payload: { ChatId: seq % 2 ? 'chat-a' : 'chat-b', Seq: seq },
        })),
      ),
    );
    const publisher = createOutboxPublisher({ db: t.db, bus, log: testLog, registry, batchSize: 100, maxRunMs: 5000, pollIntervalMs: 1000 });

    assert.deepEqual(await publisher.publishPending(jobContext()), { published: 4, failed: 0, heldBack: 0 });
    await waitFor('four events handled', () => handled.length === 4);
    for (const chat of ['chat-a', 'chat-b']) {
      const seqs = handled.filter((e) => e.key === chat).map((e) => e.payload.Seq);
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
    }

    await bus.publish([{ topic, ...envelopeToWire(handled[0]!) }]); // the same message-id again
    await waitFor('duplicate seen', async () => (await metricValue(registry, 'consumer_messages_total', { outcome: 'duplicate' })) === 1);
    assert.equal(handled.length, 4);
  });

  test('retries an infrastructure error with backoff without reordering, dead-letters poison and moves on', async () => {
    const topic = 'pin.test.in-process.v1';
    let failOnce = true;
    const registry = new Registry();
    await bus.subscribe(
      {
        name: 'in-process-retry',
        topic,
        groupId: 'g',
        eventTypes: ['E'],
        backoff: { baseMs: 20, factor: 2, capMs: 40, jitter: 0.2 },
        handle: async (e: EventEnvelope<Payload>, tx) => {
          if (e.payload.Bad) throw new PoisonMessageError('BAD', 'declared bad');
          if (e.payload.Seq === 1 && failOnce) {
            failOnce = false;
            throw new Error('connection reset');
          }
          await recordEffect(tx, 'in-process-retry', `${e.payload.Seq}`);
        },
      },
      { db: t.db, log: testLog, registry },
    );
    const wire = (seq: number, bad = false) => ({
      topic,
      ...envelopeToWire({
        messageId: `m-${seq}`,
        topic,
        key: 'same-key',
        eventType: 'E',
        contractVersion: 1,
        aggregateType: 'Chat',
        aggregateId: 'same-key',
        occurredAt: new Date().toISOString(),
        payload: { ChatId: 'same-key', Seq: seq, ...(bad ? { Bad: true } : {}) },
      }),
    });
    await bus.publish([wire(1), wire(2, true), { topic, key: 'same-key', value: 'garbage', headers: {} }, wire(3)]);

    await waitFor('good messages handled', async () => (await effects(t.pool, 'in-process-retry')).length === 2);
    assert.deepEqual(await effects(t.pool, 'in-process-retry'), ['1', '3']);
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'retried' }), 1);
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'dead_lettered' }), 2);
  });

  test('after stop, publishing fails as unavailable (the outbox keeps the rows)', async () => {
    const other = createEventBus(settings, { log: testLog, catalogue: [] });
    await other.start();
    await other.stop();
    await assert.rejects(other.publish([{ topic: 't', key: 'k', value: '{}', headers: {} }]), EventBusUnavailableError);
  });
});
