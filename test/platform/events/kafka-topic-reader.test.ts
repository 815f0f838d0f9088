import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { testKafkaClient, createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { testLog } from './support.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import type { IncomingMessage } from '../../../src/platform/events/bus.ts';

/**
 * The bus's whole-topic reader (runbook replays) on the real broker: everything from the earliest
 * offset up to the end as of each call, then only what came after; it commits nothing and leaves
 * no consumer group behind.
 */

const k: TestKafka = await createTestKafka();
const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'reader-test', log: testLog });
after(() => bus.stop());

const text = (ms: IncomingMessage[]) => ms.map((m) => `${m.partition}:${String(m.value)}`).sort();

describe('kafka topic reader', () => {
  test('reads every partition from the earliest offset to the end as of the call, then what was produced since; no group is left', async () => {
    const topic = k.topic('reader.source');
    const empty = k.topic('reader.empty');
    await k.createTopics([{ name: 'reader.source', partitions: 3 }, { name: 'reader.empty', partitions: 2 }]);
    const first = Array.from({ length: 9 }, (_, i) => ({ value: `a${i}`, partition: i % 3 }));
    await k.produce(topic, first);

    const groupId = `${k.prefix}reader.${Date.now()}`;
    const reader = await bus.openTopicReader!(topic, groupId);
    // A failed check must not leave the reader's consumer running (it kept the file alive for hours).
    after(() => reader.close());
    const read: IncomingMessage[] = [];
    await reader.readToEnd((ms) => void read.push(...ms));
    assert.deepEqual(text(read), first.map((m) => `${m.partition}:${m.value}`).sort());
    // Per partition in offset order.
    for (const p of [0, 1, 2]) {
      const offsets = read.filter((m) => m.partition === p).map((m) => Number(m.offset));
      assert.deepEqual(offsets, [...offsets].sort((a, b) => a - b));
    }

    const second = [{ value: 'b0', partition: 0 }, { value: 'b1', partition: 2 }];
    await k.produce(topic, second);
    const more: IncomingMessage[] = [];
    await reader.readToEnd((ms) => void more.push(...ms));
    assert.deepEqual(text(more), ['0:b0', '2:b1'], 'a later call hands over only what came after');
    await reader.close();

    const groups = (await k.admin.listGroups()).groups.map((g) => g.groupId);
    assert.ok(!groups.includes(groupId), 'the throwaway group is deleted on close');

    const emptyReader = await bus.openTopicReader!(empty, `${groupId}.empty`);
    after(() => emptyReader.close());
    const none: IncomingMessage[] = [];
    await emptyReader.readToEnd((ms) => void none.push(...ms));
    assert.deepEqual(none, [], 'an empty topic is read at once');
    await emptyReader.close();
  });

  test('a rebalance of the throwaway group (it commits nothing, so its partitions start over) hands no record over twice', async () => {
    const topic = k.topic('reader.rebalanced');
    await k.createTopics([{ name: 'reader.rebalanced', partitions: 3 }]);
    await k.produce(topic, Array.from({ length: 6 }, (_, i) => ({ value: `a${i}`, partition: i % 3 })));
    const groupId = `${k.prefix}reader.rebalanced.${Date.now()}`;
    const reader = await bus.openTopicReader!(topic, groupId);
    after(() => reader.close());
    const read: IncomingMessage[] = [];
    await reader.readToEnd((ms) => void read.push(...ms));
    assert.equal(read.length, 6);

    // A second member joins the group and leaves: every partition is assigned anew, from the earliest offset.
    const intruder = k.kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
    await intruder.connect();
    await intruder.subscribe({ topic, fromBeginning: true });
    const joined = new Promise<void>((resolve) => intruder.on(intruder.events.GROUP_JOIN, () => resolve()));
    await intruder.run({ autoCommit: false, eachMessage: async () => {} });
    await joined;
    await intruder.disconnect();

    await k.produce(topic, [{ value: 'b0', partition: 0 }, { value: 'b1', partition: 1 }, { value: 'b2', partition: 2 }]);
    const more: IncomingMessage[] = [];
    await reader.readToEnd((ms) => void more.push(...ms));
    assert.deepEqual(text(more), ['0:b0', '1:b1', '2:b2']);
  });
});
