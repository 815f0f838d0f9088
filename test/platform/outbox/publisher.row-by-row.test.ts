import { after, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { testKafkaClient, createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { jobContext, testLog } from '../events/support.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import type { EventBus } from '../../../src/platform/events/bus.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { aroundSends, orderEvent, publisherFactory } from './support.ts';
import { metricValue } from '../../support/metrics.ts';

/**
 * The publisher's row-by-row fallback (after a failed bulk send): it stops between rows when the
 * run is aborted or past maxRunMs, and a topic the broker refuses as a whole is tried once per run.
 */

// At the top level: the cleanup hooks these register run when the file ends.
const t: TestDatabase = await createTestDatabase();
const k: TestKafka = await createTestKafka();
const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'publisher-row-test', log: testLog });
await bus.start();
after(() => bus.stop());

beforeEach(async () => {
  await t.pool.query('delete from platform.outbox');
});

// Long runs by default: only the tests that set maxRunMs meet the deadline.
const base = publisherFactory({ db: t.db, bus, topicPrefix: k.prefix });
const publisher = (over: Parameters<typeof base>[0] = {}) => base({ maxRunMs: 60_000, ...over });

const seqOf = (value: Buffer | null) => (JSON.parse(value!.toString()) as { Seq: number }).Seq;

async function pendingRows(): Promise<{ topic: string; attempts: number; last_error: string | null; seq: number }[]> {
  const { rows } = await t.pool.query(
    `select topic, attempts, last_error, (payload->>'Seq')::int as seq from platform.outbox where published_at is null order by id`,
  );
  return rows;
}

const publishedSeqs = async () =>
  (await t.pool.query<{ seq: number }>(`select (payload->>'Seq')::int as seq from platform.outbox where published_at is not null order by id`)).rows.map(
    (r) => r.seq,
  );

/**
 * Five small rows of distinct keys, then one the broker refuses (over the topic's 2 KiB limit), on
 * a one-partition topic: the bulk send is one record batch, refused whole, so the publisher falls
 * back to row by row and nothing of the bulk attempt reaches the topic.
 */
async function batchWithARefusedRow(topic: string): Promise<void> {
  await k.createTopics([{ name: topic, partitions: 1, configEntries: [{ name: 'max.message.bytes', value: '2048' }] }]);
  await t.db.transaction((tx) =>
    enqueue(tx, [...[1, 2, 3, 4, 5].map((seq) => orderEvent(topic, `k${seq}`, seq)), orderEvent(topic, 'k6', 6, { Blob: 'x'.repeat(5000) })]),
  );
}

describe('outbox publisher row by row (real Kafka)', () => {
  test('an abort during row by row stops between rows: rows sent so far are marked, the rest wait untouched for the next run', async () => {
    const topic = 'pin.test.row-abort.v1';
    await batchWithARefusedRow(topic);
    const stop = new AbortController();
    let singles = 0;
    const abortingBus: EventBus = aroundSends(bus, async (messages, send) => {
      await send();
      if (messages.length === 1 && ++singles === 2) stop.abort(); // SIGTERM while row 2 is in flight
    });

    const counts = await publisher({ bus: abortingBus }).publishPending(jobContext(stop.signal));

    assert.deepEqual(counts, { published: 2, failed: 0, heldBack: 0 }, 'the row in flight finishes, no later row is tried');
    assert.equal(singles, 2);
    assert.deepEqual(await publishedSeqs(), [1, 2]);
    assert.deepEqual(
      (await pendingRows()).map((r) => [r.seq, r.attempts]),
      [[3, 0], [4, 0], [5, 0], [6, 0]],
      'untried rows keep attempts 0 and no error',
    );
    assert.deepEqual((await k.readTopic(k.topic(topic), { atLeast: 2 })).map((m) => seqOf(m.value)), [1, 2]);

    const next = await publisher().publishPending(jobContext());
    assert.deepEqual(next, { published: 3, failed: 1, heldBack: 0 }, 'the next run takes up where the stopped one left off');
    assert.deepEqual((await pendingRows()).map((r) => [r.seq, r.attempts]), [[6, 1]]);
  });

  test('past maxRunMs, row by row stops after the first row it tries (one row always goes, so a slow bulk failure cannot stall the outbox)', async () => {
    const topic = 'pin.test.row-deadline.v1';
    await batchWithARefusedRow(topic);
    // The run's clock passes its deadline the moment the bulk send has failed, whatever the machine's
    // load (a real 1 ms deadline could pass before the first claim, and then nothing is tried at all).
    let bulkFailed = false;
    const timedBus: EventBus = aroundSends(bus, async (messages, send) => {
      try {
        await send();
      } catch (err) {
        if (messages.length > 1) bulkFailed = true;
        throw err;
      }
    });
    const p = publisher({ bus: timedBus });

    const counts = await p.publishPending({ ...jobContext(), monotonicMs: () => (bulkFailed ? Number.MAX_SAFE_INTEGER : 0) });

    assert.deepEqual(counts, { published: 1, failed: 0, heldBack: 0 });
    assert.deepEqual(await publishedSeqs(), [1]);
    assert.deepEqual((await pendingRows()).map((r) => [r.seq, r.attempts]), [[2, 0], [3, 0], [4, 0], [5, 0], [6, 0]]);
  });

  test('a topic the broker refuses as a whole blocks its rows for the rest of the run after one attempt; other topics are published', async () => {
    const good = 'pin.test.row-good.v1';
    const bad = 'pin.test.row bad!.v1'; // an invalid topic name: INVALID_TOPIC_EXCEPTION (auto-create is on, so a missing topic would just appear)
    await k.createTopics([{ name: good, partitions: 1 }]);
    await t.db.transaction((tx) =>
      enqueue(tx, [
        orderEvent(good, 'a1', 1),
        orderEvent(bad, 'x', 2),
        orderEvent(good, 'a2', 3),
        orderEvent(bad, 'y', 4),
        orderEvent(good, 'a3', 5),
        orderEvent(bad, 'z', 6),
      ]),
    );
    const p = publisher({ batchSize: 2 }); // the later batches show the block outlives the batch that found it

    const counts = await p.publishPending(jobContext());

    assert.deepEqual(counts, { published: 3, failed: 1, heldBack: 2 });
    assert.deepEqual(await publishedSeqs(), [1, 3, 5]);
    const pending = await pendingRows();
    assert.deepEqual(pending.map((r) => [r.seq, r.attempts]), [[2, 1], [4, 0], [6, 0]], 'only the first row of the topic was tried');
    assert.match(pending[0]!.last_error!, /invalid topic/i);
    assert.equal(await metricValue(p.registry, 'outbox_publish_failures_total', { topic: bad }), 1);
    assert.equal(await metricValue(p.registry, 'outbox_published_total', { topic: good }), 3);
    assert.deepEqual((await k.readTopic(k.topic(good), { atLeast: 3 })).map((m) => seqOf(m.value)), [1, 3, 5]);
  });
});
