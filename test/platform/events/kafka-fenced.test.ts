import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { testKafkaClient, createTestKafka } from '../../support/kafka.ts';
import { testLog } from './support.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { EventBusFencedError } from '../../../src/platform/events/errors.ts';
import type { OutgoingMessage } from '../../../src/platform/events/bus.ts';

// At the top level: the cleanup hooks these register run when the file ends.
const k = await createTestKafka();
/** Two replicas: their own Kafka clients, the same client id (as every replica of the service has). */
const [a, b] = [createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'fenced-test', log: testLog }), createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'fenced-test', log: testLog })];
await Promise.all([a.start(), b.start()]);
after(() => Promise.all([a.stop(), b.stop()]));

const message = (topic: string, value: string): OutgoingMessage => ({ topic, key: 'k', value, headers: { 'message-id': value } });

test('once another replica starts the same fenced publisher, Kafka refuses the old one\'s late send and a read-committed reader never sees it', async () => {
  const topic = k.topic('pin.test.fenced.v1');
  await k.createTopics([{ name: 'pin.test.fenced.v1', partitions: 1 }]);
  const name = `outbox-publisher.${k.prefix}`;
  const old = a.fencedPublisher!(name);
  const taker = b.fencedPublisher!(name);
  assert.equal(old.transactionalId, taker.transactionalId, 'one transactional.id on every replica');

  await old.publish([message(topic, 'v1')]);
  taker.reset(); // what the publisher does when it takes the lock over
  await taker.publish([message(topic, 'v2')]);
  await assert.rejects(old.publish([message(topic, 'v1-late')]), EventBusFencedError);
  await taker.publish([message(topic, 'v3')]);

  const read = await k.readTopic(topic, { atLeast: 3 });
  assert.deepEqual(read.map((m) => m.value?.toString()), ['v1', 'v2', 'v3'], 'the fenced send is not on the topic for read-committed consumers');
});
