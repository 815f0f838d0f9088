import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { buildTestApp } from '../../../support/app.ts';
import { buildApp } from '../../../../src/app.ts';
import { loadConfig } from '../../../../src/config.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { createTestKafka } from '../../../support/kafka.ts';
import { newId } from '../../../../src/platform/time.ts';
import { TOPICS } from '../../../../src/event-topics.ts';
import messenger from '../../../../src/modules/messenger/index.ts';
import { USER_SYNC_CONSUMER, USER_SYNC_GROUP } from '../../../../src/modules/messenger/user-replica/user-sync.consumer.ts';
import { nextPhone, openConflicts, replicaRow, simulateReplicaWriteOutage, userUpserted } from '../support/user-sync.ts';
import { logCapture } from '../../../support/logs.ts';
import { metricValue } from '../../../support/metrics.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * Order, retries, concurrent writers and replay of the user replica consumer on the real broker:
 * the partition keeps its order across an infrastructure retry, a unique violation from a
 * concurrent writer takes the conflict path at once (no retry), and re-reading the topic from
 * offset 0 into an empty replica converges to the same replica.
 */

const k = await createTestKafka();
const env = { KAFKA_BROKERS: k.brokers.join(','), KAFKA_TOPIC_PREFIX: k.prefix, JOBS_ENABLED: 'true' };
const logs = logCapture();
const first = await buildTestApp(env, { modules: [messenger], logDestination: logs.stream });
await first.app.platform.startBackground();
const pool = first.database.pool;
const topic = k.topic(TOPICS.identityUsers);
const retried = (registry = first.app.platform.registry) =>
  metricValue(registry, 'consumer_messages_total', { consumer: USER_SYNC_CONSUMER, outcome: 'retried' });
const versionOf = async (p: pg.Pool, userId: string) => Number((await replicaRow(p, userId))?.identity_user_version ?? 0);
const untilVersion = (userId: string, v: number, p = pool) => waitFor(`${userId} at version ${v}`, async () => (await versionOf(p, userId)) === v);

/** Backends of this database parked on a lock: the consumer waiting for the concurrent writer. */
const lockWaiters = async () =>
  Number(
    (await pool.query<{ n: string }>(`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`))
      .rows[0]!.n,
  );

/** Opens a transaction that inserts a live replica row holding `phone` and keeps it open. */
async function concurrentHolder(phone: string) {
  const holderId = newId();
  const client = await pool.connect();
  await client.query('begin');
  await client.query(
    `insert into messenger.users (id, first_name, middle_name, last_name, phone_number, is_active, identity_user_version, created_at, updated_at)
     values ($1, 'Гонщик', null, '', $2, true, 1, now(), now())`,
    [holderId, phone],
  );
  return {
    holderId,
    async commit() {
      await client.query('commit');
      client.release();
    },
  };
}

describe('user replica ordering, retries, concurrency and replay (real Kafka)', () => {
  after(() => first.app.close());

  test('out-of-order versions across a retry: the partition keeps its order while it backs off, the older version is stale', async () => {
    const userId = newId();
    await k.produce(topic, [userUpserted(userId, { version: 1, phone: nextPhone() })]);
    await untilVersion(userId, 1);
    // A transient infrastructure failure for Version 3 only.
    const undo = await simulateReplicaWriteOutage(pool, 'test_fail_v3', 'new.identity_user_version = 3');
    const retriedBefore = await retried();
    const phone3 = nextPhone();
    try {
      await k.produce(topic, [userUpserted(userId, { version: 3, phone: phone3, firstName: 'Третий' }), userUpserted(userId, { version: 2, firstName: 'Второй' })]);
      await waitFor('version 3 retried with backoff', async () => (await retried()) > retriedBefore);
      assert.equal(await versionOf(pool, userId), 1, 'version 2 did not overtake version 3 during the backoff');
      const line = logs.lines().find((l) => l.msg === 'failed' && l.userId === userId);
      assert.equal(line?.version, 3);
      assert.match(String((line?.err as { message?: string })?.message), /SQLSTATE 55P03/);
      assert.ok(!logs.text().includes(phone3) && !logs.text().includes('Третий'), 'no row values in the retry log');
    } finally {
      await undo();
    }
    await untilVersion(userId, 3);
    await waitFor(
      'version 2 skipped as stale',
      async () => (await metricValue(first.app.platform.registry, 'messenger_identity_stale_events_total')) >= 1,
    );
    const row = await replicaRow(pool, userId);
    assert.equal(row?.first_name, 'Третий');
    assert.equal(row?.revision, '2', 'written twice: version 1, then version 3 — never version 2');
  });

  test('a unique violation from a concurrent writer (new user) maps to the conflict path without a retry', async () => {
    const userId = newId();
    const phone = nextPhone();
    const holder = await concurrentHolder(phone);
    const retriedBefore = await retried();
    await k.produce(topic, [userUpserted(userId, { version: 1, phone, firstName: 'Второй' })]);
    await waitFor('consumer waiting on the unique index', async () => (await lockWaiters()) >= 1);
    await holder.commit();
    await untilVersion(userId, 1);
    const row = await replicaRow(pool, userId);
    assert.equal(row?.phone_number, null);
    assert.equal(row?.first_name, 'Второй');
    assert.deepEqual(await openConflicts(pool, userId), [{ phone_number: phone, holder_user_id: holder.holderId, status: 'Open', occurrences: 1 }]);
    assert.equal(await retried(), retriedBefore, 'no infrastructure retry');
  });

  test('a unique violation from a concurrent writer (existing user becoming live) keeps the old phone without a retry', async () => {
    const userId = newId();
    const [own, wanted] = [nextPhone(), nextPhone()];
    await k.produce(topic, [userUpserted(userId, { version: 1, phone: own, status: 'Blocked' })]);
    await untilVersion(userId, 1);
    const holder = await concurrentHolder(wanted);
    const retriedBefore = await retried();
    await k.produce(topic, [userUpserted(userId, { version: 2, phone: wanted, status: 'Active' })]);
    await waitFor('consumer waiting on the unique index', async () => (await lockWaiters()) >= 1);
    await holder.commit();
    await untilVersion(userId, 2);
    const row = await replicaRow(pool, userId);
    assert.deepEqual([row?.phone_number, row?.is_active], [own, true]);
    assert.equal((await openConflicts(pool, userId))[0]?.holder_user_id, holder.holderId);
    assert.equal(await retried(), retriedBefore, 'no infrastructure retry');
  });

  test('replaying the topic from offset 0 converges to the same replica, on an empty replica and on a full one', async () => {
    // Phone swaps across partitions (the conflict + hand-over path), status flips, stale and duplicates.
    const [a, b, c] = [newId(), newId(), newId()];
    const [p1, p2, p3, p4] = [nextPhone(), nextPhone(), nextPhone(), nextPhone()];
    const dup = userUpserted(c, { version: 2, phone: p4, status: 'Archived', partition: 2 });
    await k.produce(topic, [
      userUpserted(a, { version: 1, phone: p1, partition: 0 }),
      userUpserted(b, { version: 1, phone: p2, partition: 1 }),
      userUpserted(c, { version: 1, phone: p4, partition: 2 }),
    ]);
    await Promise.all([untilVersion(a, 1), untilVersion(b, 1), untilVersion(c, 1)]);
    // b takes a's phone before a's move away from it is seen: a conflict, then a hand-over.
    await k.produce(topic, [userUpserted(b, { version: 2, phone: p1, firstName: 'Б', partition: 1 })]);
    await untilVersion(b, 2);
    await k.produce(topic, [userUpserted(a, { version: 2, phone: p3, firstName: 'А', partition: 0 }), dup, dup, userUpserted(c, { version: 1, phone: p2, partition: 2 })]);
    await untilVersion(a, 2);
    await untilVersion(c, 2);
    await waitFor('b got the released phone', async () => (await replicaRow(pool, b))?.phone_number === p1);

    const snapshot = async (p: pg.Pool) => {
      const { rows } = await p.query(
        `select id, first_name, middle_name, last_name, phone_number, is_active, identity_user_version
           from messenger.users where id = any($1::uuid[]) order by id`,
        [[a, b, c]],
      );
      const open = await p.query(`select count(*)::int as n from messenger.user_phone_conflicts where user_id = any($1::uuid[]) and status = 'Open'`, [[a, b, c]]);
      return { rows, open: open.rows[0].n as number };
    };
    const expected = await snapshot(pool);
    assert.deepEqual(
      expected.rows.map((r) => [r.id, r.phone_number, r.is_active, r.identity_user_version]),
      [
        [a, p3, true, '2'],
        [b, p1, true, '2'],
        [c, p4, false, '2'],
      ].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    );
    assert.equal(expected.open, 0);

    await first.app.close();
    const groupId = `${k.prefix}${USER_SYNC_GROUP}`;
    // Offsets can be reset only in a group without members.
    const rewind = async () => {
      await waitFor('consumer group empty', async () => (await k.admin.describeGroups([groupId])).groups[0]?.state === 'Empty');
      await k.admin.resetOffsets({ groupId, topic, earliest: true });
    };
    await rewind();

    const total = (await k.admin.fetchTopicOffsets(topic)).reduce((n, o) => n + Number(o.high), 0);
    const seen = (registry: Parameters<typeof metricValue>[0]) => metricValue(registry, 'consumer_messages_total', { consumer: USER_SYNC_CONSUMER });

    // An empty replica (new database) reading everything from offset 0, in whatever cross-partition order.
    const replay = await buildTestApp(env, { modules: [messenger] });
    await replay.app.platform.startBackground();
    await waitFor('replay read the whole topic', async () => (await seen(replay.app.platform.registry)) >= total, 20_000);
    assert.deepEqual(await snapshot(replay.database.pool), expected);
    await replay.app.close();

    // The first replica again with its inbox expired: only the version guard stands, every event is stale.
    await pool.query(`delete from platform.inbox`);
    await rewind();
    const rerun = await buildAppOn(first.database);
    await rerun.platform.startBackground();
    try {
      await waitFor('rerun read the whole topic', async () => (await seen(rerun.platform.registry)) >= total, 20_000);
      assert.equal(await metricValue(rerun.platform.registry, 'messenger_users_upserted_total'), 0);
      assert.ok((await metricValue(rerun.platform.registry, 'messenger_identity_stale_events_total')) >= 7);
      assert.deepEqual(await snapshot(pool), expected);
    } finally {
      await rerun.close();
    }
  });
});

/** The app on an existing test database (the replay onto a replica that already has everything). */
async function buildAppOn(database: { pool: pg.Pool; url: string }) {
  const config = loadConfig({ ...env, LOG_LEVEL: 'warn', PORT: '0' });
  return buildApp(config, { pool: database.pool, databaseUrl: database.url, log: createLogger('warn'), modules: [messenger] });
}
