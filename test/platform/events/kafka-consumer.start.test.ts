import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Kafka, logLevel, type Consumer, type ConsumerConfig } from 'kafkajs';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { testLog } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';
import { startKafkaConsumer } from '../../../src/platform/events/kafka-consumer.ts';

/**
 * A consumer whose start fails after it connected (here: the broker refuses the topic name at
 * subscribe) is disconnected before the error reaches the caller, who retries with a new one:
 * failed starts must not pile up connections to the broker.
 */

const t: TestDatabase = await createTestDatabase();
const k: TestKafka = await createTestKafka();

/** The real kafkajs client, with every consumer it makes recorded (connect and disconnect events). */
function recordingKafka() {
  const kafka = new Kafka({ clientId: `start-test-${k.prefix}`, brokers: k.brokers, logLevel: logLevel.NOTHING });
  const consumers: { consumer: Consumer; connected: boolean; disconnected: boolean }[] = [];
  const recording = {
    consumer(config: ConsumerConfig): Consumer {
      const consumer = kafka.consumer(config);
      const seen = { consumer, connected: false, disconnected: false };
      consumer.on(consumer.events.CONNECT, () => void (seen.connected = true));
      consumer.on(consumer.events.DISCONNECT, () => void (seen.disconnected = true));
      consumers.push(seen);
      return consumer;
    },
  };
  return { kafka: recording as unknown as Kafka, consumers };
}

describe('kafka consumer start (real Kafka)', () => {
  test('subscribe failing after connect: the consumer is disconnected and the error is rethrown', async () => {
    const { kafka, consumers } = recordingKafka();
    const processor = createMessageProcessor(
      resolveConsumer(
        // Not a valid topic name: the broker answers INVALID_TOPIC_EXCEPTION at subscribe.
        { name: 'bad-topic', topic: 'pin.test.bad topic!.v1', groupId: 'bad-topic', eventTypes: ['E'], handle: async () => {} },
        k.prefix,
      ),
      { db: t.db, log: testLog, metrics: consumerMetrics(new Registry()), publish: async () => {} },
    );

    for (let attempt = 1; attempt <= 2; attempt++) {
      await assert.rejects(startKafkaConsumer({ kafka, processor, log: testLog }), /invalid topic/i);
    }

    assert.equal(consumers.length, 2);
    for (const c of consumers) {
      assert.equal(c.connected, true, 'the start got past connect');
      assert.equal(c.disconnected, true, 'and the failed consumer let go of its connections');
    }
  });

  test('joining the group refused for good (a session timeout the broker does not allow): the start fails, no dead consumer is handed back', async () => {
    // kafkajs's run() resolves even then: its runner crashes the consumer (not to be restarted) and returns.
    const { kafka, consumers } = recordingKafka();
    const topic = 'pin.test.join-refused.v1';
    await k.createTopics([{ name: topic, partitions: 1 }]);
    const processor = createMessageProcessor(
      resolveConsumer({ name: 'join-refused', topic, groupId: 'join-refused', eventTypes: ['E'], handle: async () => {} }, k.prefix),
      { db: t.db, log: testLog, metrics: consumerMetrics(new Registry()), publish: async () => {} },
    );
    // Below the broker's group.min.session.timeout.ms (1,000 on the local broker): INVALID_SESSION_TIMEOUT at JoinGroup.
    await assert.rejects(startKafkaConsumer({ kafka, processor, log: testLog, sessionTimeoutMs: 500 }), /session timeout/i);
    assert.equal(consumers.length, 1);
    assert.equal(consumers[0]!.disconnected, true, 'the refused consumer let go of its connections');
  });
});
