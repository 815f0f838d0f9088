import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Consumer } from '@platformatic/kafka';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { testLog } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';
import { kafkaErrorTypes } from '../../../src/platform/events/kafka-util.ts';
import type { PlatformaticConnection } from '../../../src/platform/events/platformatic-clients.ts';
import { startPlatformaticConsumer } from '../../../src/platform/events/platformatic-consumer.ts';

/**
 * A consumer whose start fails after its group member was created (the broker refuses the topic, or
 * the group refuses the member) closes that member before the error reaches the caller, who retries
 * with a new one: failed starts must not pile up connections to the broker, nor hand back a dead consumer.
 */

const t: TestDatabase = await createTestDatabase();
const k: TestKafka = await createTestKafka();
const connection: PlatformaticConnection = { clientId: `start-test-${k.prefix}`, brokers: k.brokers, connectionTimeoutMs: 1000, requestTimeoutMs: 5000, security: undefined };

/** Every consumer the library creates in this process (its diagnostics channel announces each new client). */
const created: Consumer[] = [];
const onInstance = (m: unknown) => {
  const { type, instance } = m as { type: string; instance: unknown };
  if (type === 'consumer') created.push(instance as Consumer);
};
subscribe('plt:kafka:instances', onInstance);
after(() => unsubscribe('plt:kafka:instances', onInstance));

const processorFor = (name: string, topic: string) =>
  createMessageProcessor(resolveConsumer({ name, topic, groupId: name, eventTypes: ['E'], handle: async () => {} }, k.prefix), {
    db: t.db,
    log: testLog,
    metrics: consumerMetrics(new Registry()),
    publish: async () => {},
  });

describe('kafka consumer start (real Kafka)', () => {
  test('the broker refusing the topic: the member is closed and the error rethrown, each time', async () => {
    // Not a valid topic name: the broker refuses it when the member asks for its metadata.
    const processor = processorFor('bad-topic', 'pin.test.bad topic!.v1');
    const first = created.length;
    for (let attempt = 1; attempt <= 2; attempt++) {
      await assert.rejects(startPlatformaticConsumer({ connection, processor, log: testLog }), (err: unknown) => kafkaErrorTypes(err).has('INVALID_TOPIC_EXCEPTION'));
    }
    const members = created.slice(first);
    assert.equal(members.length, 2, 'one member per start');
    for (const c of members) assert.equal(c.closed, true, 'the failed member let go of its connections');
  });

  test('joining the group refused for good (a session timeout the broker does not allow): the start fails, no dead consumer is handed back', async () => {
    const topic = 'pin.test.join-refused.v1';
    await k.createTopics([{ name: topic, partitions: 1 }]);
    const first = created.length;
    // Below the broker's group.min.session.timeout.ms (1,000 on the local broker): INVALID_SESSION_TIMEOUT at JoinGroup.
    await assert.rejects(startPlatformaticConsumer({ connection, processor: processorFor('join-refused', topic), log: testLog, sessionTimeoutMs: 500 }), (err: unknown) =>
      kafkaErrorTypes(err).has('INVALID_SESSION_TIMEOUT'),
    );
    const members = created.slice(first);
    assert.equal(members.length, 1);
    assert.equal(members[0]!.closed, true, 'the refused member let go of its connections');
  });
});
