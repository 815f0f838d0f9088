import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { testKafkaClient, createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { jobContext, testLog } from '../events/support.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { createLockConnection } from '../../../src/platform/jobs/advisory-lock.ts';
import { LeaseLostError, lockKeyOf } from '../../../src/platform/jobs/index.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { OUTBOX_PUBLISHER_JOB } from '../../../src/platform/outbox/publisher.ts';
import { orderEvent, publisherFactory } from './support.ts';

// At the top level: the cleanup hooks these register run when the file ends.
const t: TestDatabase = await createTestDatabase();
const k: TestKafka = await createTestKafka();
const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'publisher-fence-test', log: testLog });
await bus.start();
after(() => bus.stop());
const publisher = publisherFactory({ db: t.db, bus, topicPrefix: k.prefix });

test('a publisher run whose lease was taken over ends before its first send: nothing reaches Kafka, is marked or is counted as failed under the old token', async (t2) => {
  const topic = 'pin.test.fence-run.v1';
  await k.createTopics([{ name: topic, partitions: 1 }]);
  await t.db.transaction((tx) => enqueue(tx, [1, 2, 3].map((seq) => orderEvent(topic, 'k', seq))));
  const key = lockKeyOf(OUTBOX_PUBLISHER_JOB);
  const locks = createLockConnection({ databaseUrl: t.url, log: testLog });
  t2.after(() => locks.close());
  // This replica's run got token n; another replica has acquired since (token n + 1).
  const old = (await locks.tryLock(key, { holder: 'old', ttlMs: 60_000 }))!;
  await old.release();
  const current = (await locks.tryLock(key, { holder: 'new', ttlMs: 60_000 }))!;

  const stale = { ...jobContext(), fence: { key, token: old.token! } };
  await assert.rejects(publisher().publishPending(stale), LeaseLostError);
  const { rows } = await t.pool.query<{ published: number; attempts: number }>(
    `select count(*) filter (where published_at is not null)::int as published, coalesce(sum(attempts), 0)::int as attempts from platform.outbox`,
  );
  assert.deepEqual(rows[0], { published: 0, attempts: 0 });
  // Its producer would have fenced the current holder's and committed the rows (a late repeat after a takeover).
  assert.equal((await k.readTopic(k.topic(topic))).length, 0, 'the stale run started no producer and sent nothing');

  const fresh = { ...jobContext(), fence: { key, token: current.token! } };
  assert.deepEqual(await publisher().publishPending(fresh), { published: 3, failed: 0, heldBack: 0 });
  assert.equal((await k.readTopic(k.topic(topic), { atLeast: 3 })).length, 3, 'each row once, from the holder');
  await current.release();
});
