import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { testKafkaClient, createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { closedPort, testLog } from './support.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { createEventBus } from '../../../src/platform/events/create-bus.ts';
import { EventBusUnavailableError } from '../../../src/platform/events/errors.ts';
import { topicsToCreate } from '../../../src/platform/events/topics.ts';
import { EVENT_TOPICS } from '../../../src/event-topics.ts';

// At the top level: the topic cleanup hook runs when the file ends.
const k: TestKafka = await createTestKafka();

async function partitionCounts(): Promise<Map<string, number>> {
  const names = (await k.admin.listTopics()).filter((n) => n.startsWith(k.prefix));
  const { topics } = await k.admin.fetchTopicMetadata({ topics: names });
  return new Map(topics.map((t) => [t.name.slice(k.prefix.length), t.partitions.length]));
}

describe('kafka event bus', () => {
  test('start creates every catalogue topic and a .dlq twin per consumed topic with the same partition count; again is fine', async () => {
    const settings = {
      KAFKA_BROKERS: k.brokers.join(','),
      KAFKA_CLIENT: testKafkaClient,
      KAFKA_CLIENT_ID: 'bus-test',
      KAFKA_TOPIC_PREFIX: k.prefix,
    };
    const bus = createEventBus(settings, { log: testLog, catalogue: EVENT_TOPICS });
    assert.equal(bus.kind, 'kafka');
    await bus.start();
    after(() => bus.stop());
    const again = createEventBus(settings, { log: testLog, catalogue: EVENT_TOPICS });
    await again.start(); // a second replica starting: topics exist, nothing fails
    await again.ensureTopics(topicsToCreate(EVENT_TOPICS, { prefix: k.prefix }));
    await again.stop();

    const counts = await partitionCounts();
    for (const t of EVENT_TOPICS) {
      assert.equal(counts.get(t.name), 6, t.name);
      assert.equal(counts.get(`${t.name}.dlq`), t.consumed ? 6 : undefined, `${t.name}.dlq`);
    }
    assert.equal(counts.size, topicsToCreate(EVENT_TOPICS).length);
    assert.equal(await bus.health(), 'ok');
  });

  test('a DLQ twin follows its source topic partition count', async () => {
    const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'bus-test', log: testLog });
    after(() => bus.stop());
    await bus.ensureTopics(topicsToCreate([{ name: 'pin.test.small.v1', partitions: 2, consumed: true }], { prefix: k.prefix }));
    const counts = await partitionCounts();
    assert.equal(counts.get('pin.test.small.v1'), 2);
    assert.equal(counts.get('pin.test.small.v1.dlq'), 2);
  });

  test('with no broker listening, health is down within the health timeout and publish fails as unavailable', async () => {
    const bus = createKafkaBus({ client: testKafkaClient, brokers: [`127.0.0.1:${await closedPort()}`], clientId: 'bus-test', log: testLog, healthTimeoutMs: 1500 });
    after(() => bus.stop());
    assert.equal(await bus.health(), 'down');
    await assert.rejects(
      bus.publish([{ topic: k.topic('pin.test.none.v1'), key: 'k', value: '{}', headers: {} }]),
      EventBusUnavailableError,
    );
    await assert.rejects(bus.start(), EventBusUnavailableError);
  });
});
