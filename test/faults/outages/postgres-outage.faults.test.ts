import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createTestKafka } from '../../support/kafka.ts';
import { waitFor } from '../../support/wait.ts';
import { sampleOf, seeded, startFaultService, startPrivatePostgres, startUserLoad } from './support.ts';

const OUTAGE_MS = 10_000;

test('PostgreSQL stopped for 10 s mid-run: the service stays up, is unready and still scrapable, answers writes 503 with Retry-After, then its jobs resume and nothing is lost', async (t) => {
  const rng = seeded('postgres-outage', t);
  const postgres = await startPrivatePostgres();
  const kafka = await createTestKafka();
  const service = await startFaultService({
    DATABASE_URL: postgres.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    KAFKA_TOPIC_PREFIX: kafka.prefix,
    OUTBOX_POLLING_INTERVAL: '200ms',
  }, {
    // A connect timeout short enough that a pool connection to the stopped server fails well within the outage.
    kernel: { kafkaTopicPartitions: 2, databaseConnectTimeoutMs: 1000 },
  });
  // The test's own reads; an idle client cut by the server's stop must not crash the file.
  const openPool = () => new pg.Pool({ connectionString: postgres.url, max: 2 }).on('error', () => undefined);
  let pool = openPool();
  after(() => pool.end());
  const count = async (q: string) => (await pool.query<{ n: number }>(q)).rows[0]!.n;
  const unpublished = () => count('select count(*)::int as n from platform.outbox where published_at is null');
  const replicated = () => count('select count(*)::int as n from messenger.users m join identity.users i using (id)');

  await waitFor('the service ready', async () => (await service.ready()).status === 200, 30_000);
  const load = startUserLoad(service, 100);
  const before = rng.int(5, 30);
  await waitFor(`${before} users created before the fault`, () => load.created.length >= before, 30_000);

  await pool.end();
  await postgres.stop();
  const outageEnds = Date.now() + OUTAGE_MS;
  await waitFor('/health/ready to report the database down (503)', async () => {
    const ready = await service.ready();
    return ready.status === 503 && ready.dependencies.database === 'down';
  });
  let staleSeen = 0;
  while (Date.now() < outageEnds) {
    service.assertAlive();
    const metrics = await service.metrics();
    assert.equal(metrics.status, 200, 'a scrape answers while PostgreSQL is down');
    // The database-backed gauges keep their last value and say how stale it is.
    staleSeen = Math.max(staleSeen, sampleOf(metrics.text, 'metrics_db_gauge_stale_seconds'));
    sampleOf(metrics.text, 'outbox_oldest_pending_age_seconds');
    await sleep(Math.min(1000, Math.max(0, outageEnds - Date.now())));
  }
  assert.ok(staleSeen > 0, 'metrics_db_gauge_stale_seconds rose during the outage');
  assert.ok(load.failed() > 0, 'writes failed while the database was down');
  // A write the service answered while its database was down was told to come back later, never a 500.
  const answered = [...load.answers.keys()];
  rng.step(`failed writes answered: ${JSON.stringify(Object.fromEntries(load.answers))}`);
  assert.ok(answered.length > 0, 'the service answered the failed writes');
  assert.deepEqual(answered, ['503 SERVICE_UNAVAILABLE 5'], `answers while the database was down: ${answered.join(', ')}`);

  await postgres.start();
  await sleep(rng.int(500, 3000)); // load goes on across the recovery
  await load.stop();
  pool = openPool();
  await waitFor('the service ready again', async () => (await service.ready()).status === 200, 30_000);
  const expected = await count('select count(*)::int as n from identity.users');
  rng.report({ expected });
  // What the service acknowledged committed (a request cut off by the stop may have committed too).
  assert.ok(expected >= load.created.length, `${expected} users committed, ${load.created.length} acknowledged`);
  assert.ok(load.created.length > before, 'writes succeeded again after the restart');

  await waitFor('the outbox publisher resumed and drained', async () => (await unpublished()) === 0, 60_000);
  await waitFor('the replica consumer caught up', async () => (await replicated()) === expected, 60_000);
  await waitFor('the gauges fresh again', async () => sampleOf((await service.metrics()).text, 'metrics_db_gauge_stale_seconds') === 0, 30_000);
  service.assertAlive();

  const offsets = await kafka.admin.fetchTopicOffsets(kafka.topic('pin.identity.users.v1'));
  const inKafka = offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  const rows = await count(`select count(*)::int as n from platform.outbox where topic = 'pin.identity.users.v1'`);
  rng.report({ expected, seen: await replicated(), duplicated: inKafka - rows });
  assert.ok(inKafka >= rows, `${inKafka} messages in Kafka for ${rows} outbox rows`);
});
