import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Admin } from '@platformatic/kafka';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { logCapture } from '../../support/logs.ts';
import { waitFor } from '../../support/wait.ts';
import { createEffectsTable, effects, labelledMessage, recordEffect, type LabelPayload } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';
import { startPlatformaticConsumer } from '../../../src/platform/events/platformatic-consumer.ts';
import type { PlatformaticConnection } from '../../../src/platform/events/platformatic-clients.ts';

/**
 * A group member the library gives up on (its message stream fails, a rejoin fails, heartbeats
 * stall) would leave the consumer, and its context's event flow, stopped for good: the consumer
 * closes it and opens another after a backoff, until one runs. The fault here is real: the topic is
 * deleted under the running member, so its fetches fail; while the topic is missing the replacement
 * cannot start either, and once the topic is back the new member handles what is produced to it.
 */

const t: TestDatabase = await createTestDatabase();
const k: TestKafka = await createTestKafka();
await createEffectsTable(t.pool);
const admin = new Admin({ clientId: `replace-test-${k.prefix}`, bootstrapBrokers: k.brokers });
after(() => admin.close());

test('a member whose stream the library gives up on is closed and replaced, and the new member handles the message', { timeout: 90_000 }, async () => {
  const topic = 'pin.test.replace.v1';
  await k.createTopics([{ name: topic, partitions: 1 }]);
  const capture = logCapture('info');
  const processor = createMessageProcessor(
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
  const connection: PlatformaticConnection = { clientId: `replace-test-${k.prefix}`, brokers: k.brokers, connectionTimeoutMs: 1000, requestTimeoutMs: 5000, security: undefined };
  const consumer = await startPlatformaticConsumer({ connection, processor, log: capture.log, sessionTimeoutMs: 6000 });
  try {
    const before = labelledMessage('before-the-fault');
    await k.produce(k.topic(topic), [{ key: before.key, value: before.value, headers: before.headers }]);
    await waitFor('the first member handled a message', async () => (await effects(t.pool, 'replace-test')).length > 0, 30_000);

    await admin.deleteTopics({ topics: [k.topic(topic)] });
    await waitFor('the failed member given up', () => capture.lines().some((l) => l.msg === 'kafka consumer stream failed; replacing the group member'), 45_000);
    await k.createTopics([{ name: topic, partitions: 1 }]);
    const m = labelledMessage('after-the-fault');
    await k.produce(k.topic(topic), [{ key: m.key, value: m.value, headers: m.headers }]);

    await waitFor('the message handled by the member that replaced the failed one', async () => (await effects(t.pool, 'replace-test')).includes('after-the-fault'), 60_000);
    assert.deepEqual(await effects(t.pool, 'replace-test'), ['before-the-fault', 'after-the-fault'], 'each handled once');
    assert.ok(capture.lines().some((l) => l.msg === 'kafka consumer replaced'), 'the replacement is logged');
  } finally {
    await consumer.stop();
  }
});
