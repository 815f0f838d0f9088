import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { logCapture } from '../../support/logs.ts';
import { waitFor } from '../../support/wait.ts';
import { createEffectsTable, effects, labelledMessage, recordEffect, type LabelPayload } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer, type MessageProcessor } from '../../../src/platform/events/consumer-runner.ts';
import { startKafkaConsumer } from '../../../src/platform/events/kafka-consumer.ts';

/**
 * kafkajs restarts a crashed consumer only when the crash's root cause is retriable. After any other
 * (KafkaJSGroupCoordinatorNotFound on a new cluster, github.com/tulios/kafkajs/issues/1445 and /1630; an unexpected
 * error thrown while processing a batch) it leaves the consumer stopped for good, and the context's
 * event flow with it. The fault injected here is the second kind: the processing path throws once, a
 * TypeError as from a bug; the consumer must be replaced and the message still handled.
 */

const t: TestDatabase = await createTestDatabase();
const k: TestKafka = await createTestKafka();
await createEffectsTable(t.pool);

test('a crash kafkajs will not restart from (a non-retriable error out of a batch) gets a new consumer, which handles the message', { timeout: 60_000 }, async () => {
  const topic = 'pin.test.replace.v1';
  await k.createTopics([{ name: topic, partitions: 1 }]);
  const capture = logCapture('info');
  const real = createMessageProcessor(
    resolveConsumer(
      {
        name: 'replace-test',
        topic,
        groupId: 'replace-test',
        eventTypes: ['E'],
        handle: async (event, tx) => recordEffect(tx, 'replace-test', (event.payload as LabelPayload).Label),
      },
      k.prefix,
    ),
    { db: t.db, log: capture.log, metrics: consumerMetrics(new Registry()), publish: async () => {} },
  );
  let thrown = 0;
  const processor: MessageProcessor = {
    ...real,
    processBatch: async (messages) => {
      if (thrown++ === 0) throw new TypeError("Cannot read properties of undefined (reading 'payload')");
      return real.processBatch(messages);
    },
  };
  const kafka = new Kafka({ clientId: `replace-test-${k.prefix}`, brokers: k.brokers, logLevel: logLevel.NOTHING });
  const consumer = await startKafkaConsumer({ kafka, processor, log: capture.log });
  try {
    const m = labelledMessage('after-the-crash');
    await k.produce(k.topic(topic), [{ key: m.key, value: m.value, headers: m.headers }]);

    await waitFor('the message handled by the consumer that replaced the crashed one', async () => (await effects(t.pool, 'replace-test')).length > 0, 45_000);
    assert.deepEqual(await effects(t.pool, 'replace-test'), ['after-the-crash'], 'handled once');
    const lines = capture.lines();
    const crash = lines.find((l) => l.msg === 'kafka consumer crashed');
    assert.equal(crash?.restart, false, 'kafkajs itself would not have restarted it');
    assert.ok(lines.some((l) => l.msg === 'kafka consumer replaced: kafkajs does not restart after that crash'), 'the replacement is logged');
  } finally {
    await consumer.stop();
  }
});
