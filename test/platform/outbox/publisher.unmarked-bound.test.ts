import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { testKafkaClient, createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { jobContext, testLog } from '../events/support.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { orderEvent, publisherFactory } from './support.ts';
import { waitFor } from '../../support/wait.ts';

// At the top level: the cleanup hooks these register run when the file ends.
const t: TestDatabase = await createTestDatabase();
const k: TestKafka = await createTestKafka();
const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'publisher-bound-test', log: testLog });
await bus.start();
after(() => bus.stop());

const publisher = publisherFactory({ db: t.db, bus, topicPrefix: k.prefix });

describe('outbox publisher: what a crash can repeat (real Kafka, real PostgreSQL)', () => {
  test('while a mark is stuck, the publisher sends one more batch and no further: at most two batches are ever sent and unmarked', async () => {
    const topic = 'pin.test.unmarked-bound.v1';
    await k.createTopics([{ name: topic, partitions: 1 }]);
    const ids = await t.db.transaction((tx) => enqueue(tx, [1, 2, 3, 4, 5, 6].map((seq) => orderEvent(topic, 'k', seq))));

    // Another transaction holds the first row: the publisher's mark of batch 1 waits on that row lock.
    const holder = await t.pool.connect();
    await holder.query('begin');
    await holder.query('select id from platform.outbox where id = $1 for update', [ids[0]]);
    const run = publisher({ batchSize: 1 }).publishPending(jobContext());
    try {
      await waitFor(
        'the mark of batch 1 to wait on the row lock',
        async () =>
          (await t.pool.query(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like 'update platform.outbox set published_at%'`))
            .rowCount === 1,
      );
      await k.readTopic(k.topic(topic), { atLeast: 2 }); // batch 2 went out beside the stuck mark
      await sleep(500); // time enough for batches 3–6 to go out if nothing held them back
      const inKafka = (await k.readTopic(k.topic(topic), { atLeast: 2 })).length;
      assert.equal(inKafka, 2, 'sent while batch 1 is unmarked: batch 1 and batch 2 only');
    } finally {
      await holder.query('commit');
      holder.release();
    }
    assert.deepEqual(await run, { published: 6, failed: 0, heldBack: 0 });
    const { rows } = await t.pool.query<{ n: number }>(`select count(*)::int as n from platform.outbox where published_at is null`);
    assert.equal(rows[0]!.n, 0);
    assert.equal((await k.readTopic(k.topic(topic), { atLeast: 6 })).length, 6, 'each row sent once');
  });

  test('a new pass does not wait for the last mark: it sends what was committed since and leaves out the rows still being marked', async () => {
    const topic = 'pin.test.unmarked-pass.v1';
    await k.createTopics([{ name: topic, partitions: 1 }]);
    const [first] = await t.db.transaction((tx) => enqueue(tx, [orderEvent(topic, 'k', 1)]));
    // The mark of pass 1 waits on this row lock; pass 2 starts at the wake below.
    const holder = await t.pool.connect();
    await holder.query('begin');
    await holder.query('select id from platform.outbox where id = $1 for update', [first]);
    let wakes = 0;
    const ctx = {
      ...jobContext(),
      async waitForWake() {
        if (wakes++ > 0) return false;
        await t.db.transaction((tx) => enqueue(tx, [orderEvent(topic, 'k', 2)]));
        return true;
      },
    };
    const run = publisher({ batchSize: 10, idleWaitMs: 100 }).publishPending(ctx);
    try {
      const read = await k.readTopic(k.topic(topic), { atLeast: 2 });
      assert.equal(read.length, 2, 'row 2 went out while the mark of row 1 was still waiting');
      await sleep(300); // time enough for a repeat of row 1 to show up
      assert.equal((await k.readTopic(k.topic(topic), { atLeast: 2 })).length, 2, 'row 1 was not sent again');
    } finally {
      await holder.query('commit');
      holder.release();
    }
    assert.deepEqual(await run, { published: 2, failed: 0, heldBack: 0 });
    assert.equal((await k.readTopic(k.topic(topic), { atLeast: 2 })).length, 2, 'each row sent once');
  });
});
