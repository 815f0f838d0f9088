import { after, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { testKafkaClient, createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { closedPort, jobContext, testLog } from '../events/support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import type { EventBus } from '../../../src/platform/events/bus.ts';
import type { EventEnvelope } from '../../../src/platform/events/envelope.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { aroundSends, orderEvent, publisherFactory } from './support.ts';
import { createJobRunner } from '../../../src/platform/jobs/index.ts';
import { outboxPublisherJob } from '../../../src/platform/outbox/publisher.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

// At the top level: the cleanup hooks these register run when the file ends.
const t: TestDatabase = await createTestDatabase();
const k: TestKafka = await createTestKafka();
const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'publisher-test', log: testLog });
await bus.start();
after(() => bus.stop());

// Rows of earlier tests never leak into a later test's publisher run.
beforeEach(async () => {
  await t.pool.query('delete from platform.outbox');
});

const publisher = publisherFactory({ db: t.db, bus, topicPrefix: k.prefix });

const seqOf = (value: Buffer | null) => (JSON.parse(value!.toString()) as { Seq: number }).Seq;

async function pendingRows(): Promise<{ id: string; key: string; attempts: number; last_error: string | null; seq: number }[]> {
  const { rows } = await t.pool.query(
    `select id, key, attempts, last_error, (payload->>'Seq')::int as seq from platform.outbox where published_at is null order by id`,
  );
  return rows;
}

describe('outbox publisher (real Kafka)', () => {
  test('sends committed rows in id order with the envelope, marks them published; a rolled-back transaction sends nothing', async () => {
    const topic = 'pin.test.publish.v1';
    await k.createTopics([{ name: topic, partitions: 3 }]);
    await assert.rejects(
      t.db.transaction(async (tx) => {
        await enqueue(tx, orderEvent(topic, 'rolled-back', 99));
        throw new Error('change failed');
      }),
    );
    const ids = await t.db.transaction((tx) =>
      enqueue(tx, [1, 2, 3, 4, 5].map((seq) => orderEvent(topic, seq % 2 ? 'order-a' : 'order-b', seq))),
    );
    const p = publisher({ batchSize: 2 }); // 5 rows → three batches in one run

    const counts = await p.publishPending(jobContext());

    assert.deepEqual(counts, { published: 5, failed: 0, heldBack: 0 });
    const messages = await k.readTopic(k.topic(topic), { atLeast: 5 });
    assert.equal(messages.length, 5, 'nothing from the rolled-back transaction, nothing twice');
    const bySeq = new Map(messages.map((m) => [seqOf(m.value), m]));
    assert.deepEqual([...bySeq.keys()].sort(), [1, 2, 3, 4, 5]);
    const first = bySeq.get(1)!;
    assert.equal(first.key, 'order-a');
    assert.deepEqual(first.headers, {
      'message-id': ids[0],
      'event-type': 'OrderChangedKafkaEvent',
      'contract-version': '1',
      'aggregate-type': 'Order',
      'aggregate-id': 'order-a',
      'occurred-at': '2026-01-02T03:04:05.000Z',
      'correlation-id': 'corr-1',
    });
    for (const key of ['order-a', 'order-b']) {
      const seqs = messages.filter((m) => m.key === key).map((m) => seqOf(m.value));
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), `per-key order of ${key}`);
    }
    assert.deepEqual(await pendingRows(), []);
    assert.equal(await metricValue(p.registry, 'outbox_published_total', { topic }), 5);
    assert.equal(await metricValue(p.registry, 'outbox_publish_lag_seconds', {}, 'outbox_publish_lag_seconds_count'), 5);
    assert.equal(await metricValue(p.registry, 'outbox_pending'), 0);
    assert.equal(await metricValue(p.registry, 'outbox_oldest_pending_age_seconds'), 0);
  });

  test('a refused row blocks only its own key: later rows of that key wait, other keys are published', async () => {
    const topic = 'pin.test.order.v1';
    // The broker refuses record batches over 2 KiB on this topic: a real per-message failure.
    await k.createTopics([{ name: topic, partitions: 3, configEntries: [{ name: 'max.message.bytes', value: '2048' }] }]);
    await t.db.transaction((tx) =>
      enqueue(tx, [
        orderEvent(topic, 'K1', 1),
        orderEvent(topic, 'K2', 2),
        orderEvent(topic, 'K1', 3, { Blob: 'x'.repeat(5000) }),
        orderEvent(topic, 'K2', 4),
        orderEvent(topic, 'K1', 5),
        orderEvent(topic, 'K3', 6),
      ]),
    );
    const p = publisher();

    const first = await p.publishPending(jobContext());

    assert.deepEqual(first, { published: 4, failed: 1, heldBack: 1 });
    const pending = await pendingRows();
    assert.deepEqual(pending.map((r) => [r.key, r.seq, r.attempts]), [['K1', 3, 1], ['K1', 5, 0]]);
    assert.match(pending[0]!.last_error!, /KafkaJSProtocolError|PLT_KFK_PROTOCOL/, 'the broker\'s refusal (kafkajs or @platformatic/kafka)');
    assert.doesNotMatch(pending[0]!.last_error!, /xxxx/, 'no payload in last_error');
    // The bulk send may have written some partitions before falling back: duplicates are
    // allowed (consumers dedupe), a K1 message after the refused one is not.
    const messages = await k.readTopic(k.topic(topic), { atLeast: 4 });
    assert.deepEqual([...new Set(messages.map((m) => seqOf(m.value)))].sort(), [1, 2, 4, 6]);
    assert.equal(await metricValue(p.registry, 'outbox_publish_failures_total', { topic }), 1);
    assert.equal(await metricValue(p.registry, 'outbox_pending'), 2);

    const second = await p.publishPending(jobContext());

    assert.deepEqual(second, { published: 0, failed: 1, heldBack: 1 });
    assert.deepEqual((await pendingRows()).map((r) => [r.seq, r.attempts]), [[3, 2], [5, 0]]);
  });

  test('with the broker unreachable rows stay unpublished and attempts are counted; a publisher on a reachable broker catches up', async () => {
    // "Broker down" = a bus whose broker address is a port where nothing listens (the shared
    // broker is never stopped); "back up" = the next run uses a bus on the real broker.
    const topic = 'pin.test.outage.v1';
    await k.createTopics([{ name: topic, partitions: 3 }]);
    await t.db.transaction((tx) => enqueue(tx, [1, 2, 3].map((seq) => orderEvent(topic, `k${seq}`, seq))));
    const deadBus = createKafkaBus({ client: testKafkaClient, brokers: [`127.0.0.1:${await closedPort()}`], clientId: 'dead', log: testLog });
    const registry = new Registry();
    const down = publisher({ bus: deadBus, registry });

    assert.deepEqual(await down.publishPending(jobContext()), { published: 0, failed: 3, heldBack: 0 });
    assert.deepEqual(await down.publishPending(jobContext()), { published: 0, failed: 3, heldBack: 0 });

    const pending = await pendingRows();
    assert.deepEqual(pending.map((r) => r.attempts), [2, 2, 2]);
    assert.match(pending[0]!.last_error!, /EventBusUnavailableError/);
    assert.equal(await metricValue(registry, 'outbox_publish_failures_total', { topic }), 6);
    assert.ok((await metricValue(registry, 'outbox_oldest_pending_age_seconds')) >= 0);
    assert.equal(await metricValue(registry, 'outbox_pending'), 3);
    await deadBus.stop();

    const up = publisher({ registry });
    assert.deepEqual(await up.publishPending(jobContext()), { published: 3, failed: 0, heldBack: 0 });
    assert.deepEqual(await pendingRows(), []);
    assert.equal((await k.readTopic(k.topic(topic), { atLeast: 3 })).length, 3);
  });

  test('a publisher that dies between send and mark loses nothing: the next one re-sends and the consumer handles each message once', async () => {
    const topic = 'pin.test.crash.v1';
    await bus.ensureTopics([{ name: k.topic(topic), partitions: 3 }, { name: `${k.topic(topic)}.dlq`, partitions: 3 }]);
    await t.db.transaction((tx) => enqueue(tx, [1, 2, 3, 4].map((seq) => orderEvent(topic, `k${seq % 2}`, seq))));
    let sent = false;
    // Really sends, then never returns: the process "dies" before marking anything published.
    const dyingBus: EventBus = aroundSends(bus, async (_messages, send) => {
      await send();
      sent = true;
      return new Promise<void>(() => {});
    });
    void publisher({ bus: dyingBus }).publishPending(jobContext());
    await waitFor('the dying publisher to send', () => sent);
    assert.equal((await pendingRows()).length, 4, 'sent but not marked');

    assert.deepEqual(await publisher().publishPending(jobContext()), { published: 4, failed: 0, heldBack: 0 });
    assert.equal((await k.readTopic(k.topic(topic), { atLeast: 8 })).length, 8, 'every message is on the topic twice');

    const handled: EventEnvelope[] = [];
    const registry = new Registry();
    const consumer = await bus.subscribe(
      {
        name: 'crash-test',
        topic,
        groupId: 'crash-test',
        eventTypes: ['OrderChangedKafkaEvent'],
        handle: async (event) => {
          handled.push(event);
        },
      },
      { db: t.db, log: testLog, registry, topicPrefix: k.prefix },
    );
    try {
      await waitFor(
        'the four redeliveries to be recognised',
        async () => (await metricValue(registry, 'consumer_messages_total', { outcome: 'duplicate' })) === 4,
      );
      assert.equal(handled.length, 4);
      assert.deepEqual(handled.map((e) => (e.payload as { Seq: number }).Seq).sort(), [1, 2, 3, 4]);
      const { rows } = await t.pool.query(`select count(*)::int as n from platform.inbox where consumer = 'crash-test'`);
      assert.equal(rows[0].n, 4);
    } finally {
      await consumer.stop();
    }
  });

  test('a run stops between batches when its signal aborts', async () => {
    const topic = 'pin.test.abort.v1';
    await k.createTopics([{ name: topic, partitions: 1 }]);
    await t.db.transaction((tx) => enqueue(tx, [1, 2, 3].map((seq) => orderEvent(topic, 'k', seq))));
    const stop = new AbortController();
    const abortingBus: EventBus = aroundSends(bus, async (_messages, send) => {
      await send();
      stop.abort(); // SIGTERM arrives while the first batch is in flight
    });
    const counts = await publisher({ bus: abortingBus, batchSize: 1 }).publishPending(jobContext(stop.signal));
    assert.deepEqual(counts, { published: 1, failed: 0, heldBack: 0 }, 'the batch in flight is finished and marked, no new one starts');
    assert.deepEqual((await pendingRows()).map((r) => r.seq), [2, 3]);
  });

  test('under the job runner, a commit wakes the publisher at once (NOTIFY), long before its poll interval', async () => {
    const topic = 'pin.test.wake.v1';
    await k.createTopics([{ name: topic, partitions: 1 }]);
    const registry = new Registry();
    const runner = createJobRunner({ db: t.db, databaseUrl: t.url, log: testLog, registry });
    runner.register(
      outboxPublisherJob({ db: t.db, bus, log: testLog, registry, batchSize: 100, maxRunMs: 5000, pollIntervalMs: 3_600_000, topicPrefix: k.prefix }),
    );
    await runner.start();
    try {
      // Whatever ran at start is over before the commit, so only the commit's NOTIFY can start a run.
      await waitFor('no run in progress', async () => (await runner.list()).every((j) => !j.running));
      await t.db.transaction((tx) => enqueue(tx, orderEvent(topic, 'k', 1)));
      await waitFor('the woken publisher to publish the row', async () => (await pendingRows()).length === 0);
      assert.equal((await k.readTopic(k.topic(topic), { atLeast: 1 })).length, 1);
    } finally {
      await runner.stop();
    }
  });

  test('under the job runner, a run that drained stays idleWaitMs for the next commit and publishes it in the same run', async () => {
    const topic = 'pin.test.idle-wait.v1';
    await k.createTopics([{ name: topic, partitions: 1 }]);
    const registry = new Registry();
    const runner = createJobRunner({ db: t.db, databaseUrl: t.url, log: testLog, registry });
    runner.register(
      outboxPublisherJob({ db: t.db, bus, log: testLog, registry, batchSize: 100, maxRunMs: 60_000, idleWaitMs: 30_000, pollIntervalMs: 3_600_000, topicPrefix: k.prefix }),
    );
    const publisherJob = async () => (await runner.list()).find((j) => j.name === 'outbox-publisher')!;
    await runner.start();
    try {
      await t.db.transaction((tx) => enqueue(tx, orderEvent(topic, 'k', 1)));
      await waitFor('the first row published', async () => (await pendingRows()).length === 0);
      assert.equal((await publisherJob()).running, true, 'the run waits for the next commit instead of ending');
      const runsBefore = (await publisherJob()).runsTotal;
      await t.db.transaction((tx) => enqueue(tx, orderEvent(topic, 'k', 2)));
      await waitFor('the second row published by the waiting run', async () => (await pendingRows()).length === 0);
      const job = await publisherJob();
      assert.equal(job.running, true);
      assert.equal(job.runsTotal, runsBefore, 'no new run was started for the second commit');
      assert.equal((await k.readTopic(k.topic(topic), { atLeast: 2 })).length, 2);
    } finally {
      await runner.stop(); // ends the wait at once: the run is aborted, not waited out
    }
  });

  test('the job is a single runner woken by the outbox channel on its poll interval; a batch size below 1 is refused at start', () => {
    const opts = { db: t.db, bus, log: testLog, registry: new Registry() };
    const job = outboxPublisherJob({ ...opts, batchSize: 500, maxRunMs: 5000, pollIntervalMs: 750 });
    assert.equal(job.name, 'outbox-publisher');
    assert.equal(job.singleRunner, true);
    assert.equal(job.wakeChannel, 'platform_outbox');
    assert.equal(job.every, 750);
    // Its options are checked once, at construction: a batch size below 1 never reaches a run.
    assert.throws(() => outboxPublisherJob({ ...opts, batchSize: 0, maxRunMs: 5000, pollIntervalMs: 750 }), /invalid outbox publisher options: outbox batch size: must be a whole number > 0 \(got 0\)/);
  });
});
