/**
 * ActivityCloserJob benchmark. `node scripts/bench/activity-closer.ts` (needs KAFKA_BROKERS, e.g.
 * `eval "$(bash scripts/services.sh up)"` first). Starts its own embedded PostgreSQL on a free port
 * under /tmp and prints ONE JSON line. For one closer instance and for two side by side, each time
 * over 10,000 stale Active sessions with 3 open views each (the seed's upper target load):
 *   - closeSeconds: time for the closer(s) to close everything (target ≤ 5 s for one instance);
 *   - eventsInKafkaSeconds: time from the closers' start until all 40,000 ended-events are on the
 *     broker.
 * Each is measured twice: with the outbox publisher starting once the closers are done (the
 * closers' own speed), and with the publisher draining alongside from the start, as the woken
 * publisher job does in production — on a small machine both then share the same cores.
 * Settings: BENCH_SESSIONS (10000), BENCH_VIEWS (3), BENCH_BATCH_SIZE (closer batch, 500 = default),
 * BENCH_OUTBOX_BATCH (publisher batch, 1000 = default), BENCH_PG_FAST=1 (fsync off, as the tests run).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { createDb, createPool, migrateDatabase } from '../../src/platform/db/index.ts';
import { Registry } from '../../src/platform/observability/metrics.ts';
import { createKafkaBus } from '../../src/platform/events/kafka-bus.ts';
import { topicsToCreate } from '../../src/platform/events/topics.ts';
import { createOutboxPublisher } from '../../src/platform/outbox/publisher.ts';
import { newId, type Clock } from '../../src/platform/time.ts';
import { EVENT_TOPICS, TOPICS } from '../../src/event-topics.ts';
import type { BatchCounts } from '../../src/platform/jobs/index.ts';
import { createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../src/modules/user-activity/closer/activity-closer.ts';
import { benchLogger, cpuMeter, machine, say, startBenchPostgres } from './support.ts';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const SESSIONS = env('BENCH_SESSIONS', 10_000);
const VIEWS = env('BENCH_VIEWS', 3);
const BATCH = env('BENCH_BATCH_SIZE', DEFAULT_CLOSER_SETTINGS.USER_ACTIVITY_CLOSER_BATCH_SIZE);
const OUTBOX_BATCH = env('BENCH_OUTBOX_BATCH', 1000);
const EVENTS = SESSIONS * (1 + VIEWS);
const brokers = process.env.KAFKA_BROKERS;
if (!brokers) {
  process.stderr.write('KAFKA_BROKERS is unset: eval "$(bash scripts/services.sh up)" first\n');
  process.exit(2);
}
const log = benchLogger('warn');


const pgServer = await startBenchPostgres(log);
const pool = createPool(pgServer.url, 10, log);
await migrateDatabase(pool);

const admin = new Kafka({ clientId: 'activity-closer-bench', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
await admin.connect();
const prefixes: string[] = [];

/** The clock is real time; the seeded rows are 13 minutes idle. */
const clock: Clock = { now: () => new Date() };

async function seed(): Promise<void> {
  await pool.query(`truncate user_activity.property_object_views, user_activity.sessions, platform.outbox`);
  const lastActivity = new Date(Date.now() - 13 * 60_000);
  await pool.query(
    // Each session with a device-secret digest (64 hex characters), as the start route writes them.
    `insert into user_activity.sessions
       (id, anonymous_id, user_id, device_user_agent, device_ip_address, device_secret_hash, status, created_at, last_activity_at)
     select gen_random_uuid(), 'bench-device-' || g, case when g % 3 = 0 then gen_random_uuid() end, 'Mozilla/5.0 bench', '198.51.100.1',
            encode(sha256(gen_random_uuid()::text::bytea), 'hex'), 'Active', $2::timestamptz - interval '30 minutes', $2::timestamptz - (g || ' ms')::interval
       from generate_series(1, $1) g`,
    [SESSIONS, lastActivity],
  );
  await pool.query(
    `insert into user_activity.property_object_views (id, session_id, property_object_id, view_source, filter_snapshot, status, created_at, last_activity_at)
     select gen_random_uuid(), s.id, gen_random_uuid(), 'Catalog', '{"rooms":[2,3],"priceMax":9000000}'::jsonb, 'Active',
            s.created_at + (g || ' minutes')::interval, s.last_activity_at - (g || ' seconds')::interval
       from user_activity.sessions s cross join generate_series(1, $1) g`,
    [VIEWS],
  );
  await pool.query('vacuum analyze user_activity.sessions, user_activity.property_object_views, platform.outbox');
}

async function messagesOnBroker(prefix: string): Promise<number> {
  let total = 0;
  for (const topic of [TOPICS.sessionEnded, TOPICS.propertyObjectViewEnded]) {
    const offsets = await admin.fetchTopicOffsets(`${prefix}${topic}`);
    total += offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  }
  return total;
}

async function scenario(instances: number, publisherAlongside: boolean) {
  await seed();
  const prefix = `bench${randomBytes(3).toString('hex')}.`;
  prefixes.push(prefix);
  const bus = createKafkaBus({ brokers: brokers!.split(','), clientId: 'activity-closer-bench', log });
  await bus.start();
  await bus.ensureTopics(
    topicsToCreate(
      EVENT_TOPICS.filter((t) => t.name === TOPICS.sessionEnded || t.name === TOPICS.propertyObjectViewEnded),
      { prefix },
    ),
  );
  const publisher = createOutboxPublisher({
    db: createDb(pool),
    bus,
    log,
    registry: new Registry(),
    batchSize: OUTBOX_BATCH,
    maxRunMs: 600_000,
    pollIntervalMs: 1000,
    topicPrefix: prefix,
  });
  const pools = Array.from({ length: instances }, () => createPool(pgServer.url, 4, log));
  const closers = pools.map((p) =>
    createActivityCloser({ db: createDb(p), registry: new Registry(), settings: { ...DEFAULT_CLOSER_SETTINGS, USER_ACTIVITY_CLOSER_BATCH_SIZE: BATCH } }),
  );
  const ctx = () => ({ jobRunId: newId(), signal: new AbortController().signal, log, now: () => clock.now() });

  say(`${instances} instance(s), publisher ${publisherAlongside ? 'alongside' : 'after'}: closing ${SESSIONS} sessions × ${VIEWS} views`);
  let published = 0;
  let closing = true;
  let closed: () => void = () => undefined;
  const closersDone = new Promise<void>((r) => (closed = r));
  const t0 = performance.now();
  const cpu = cpuMeter(pgServer.dataDir);
  const publishing = (async () => {
    if (!publisherAlongside) await closersDone;
    while (published < EVENTS) {
      const counts = await publisher.publishPending({ signal: new AbortController().signal, now: () => new Date(), log });
      if (counts.failed > 0) throw new Error(`publish failures: ${JSON.stringify(counts)}`);
      published += counts.published;
      if (counts.published === 0) await sleep(closing ? 5 : 20);
    }
    return (performance.now() - t0) / 1000;
  })();
  const runs: BatchCounts[] = await Promise.all(closers.map((c) => c.runOnce(ctx())));
  const closeSeconds = (performance.now() - t0) / 1000;
  const closeCpu = cpu.per1000(runs.reduce((n, r) => n + r.closedSessions! + r.closedViews!, 0));
  closing = false;
  closed();
  const eventsInKafkaSeconds = await publishing;

  const closedSessions = runs.reduce((n, r) => n + r.closedSessions!, 0);
  const closedViews = runs.reduce((n, r) => n + r.closedViews!, 0);
  const onBroker = await messagesOnBroker(prefix);
  const { rows } = await pool.query<{ n: string }>(
    `select (select count(*) from user_activity.sessions where status = 'Active') + (select count(*) from user_activity.property_object_views where status = 'Active') as n`,
  );
  await bus.stop();
  await Promise.all(pools.map((p) => p.end()));
  say(`${instances}/${publisherAlongside ? 'alongside' : 'after'}: closed in ${closeSeconds.toFixed(2)} s, all events on Kafka after ${eventsInKafkaSeconds.toFixed(2)} s`);
  return {
    instances,
    publisher: publisherAlongside ? 'alongside' : 'after closing',
    closeSeconds: Number(closeSeconds.toFixed(3)),
    closedSessions,
    closedViews,
    perInstanceSessions: runs.map((r) => r.closedSessions),
    failed: runs.reduce((n, r) => n + r.failed, 0),
    activeLeft: Number(rows[0]!.n),
    rowsPerSec: Math.round((closedSessions + closedViews) / closeSeconds),
    closeCpuMsPer1000Rows: closeCpu,
    eventsInKafkaSeconds: Number(eventsInKafkaSeconds.toFixed(3)),
    eventsPublished: published,
    messagesOnBroker: onBroker,
  };
}

const one = await scenario(1, false);
const oneWithPublisher = await scenario(1, true);
const two = await scenario(2, false);
const twoWithPublisher = await scenario(2, true);

await admin
  .deleteTopics({ topics: (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(p))) })
  .catch(() => undefined);
await admin.disconnect();
await pool.end();
await pgServer.stop();

console.log(
  JSON.stringify({
    bench: 'activity-closer',
    machine: machine(),
    postgres: { durability: pgServer.durability },
    load: { sessions: SESSIONS, viewsPerSession: VIEWS, events: EVENTS, closerBatchSize: BATCH, outboxBatchSize: OUTBOX_BATCH },
    oneInstance: one,
    oneInstancePublisherAlongside: oneWithPublisher,
    twoInstances: two,
    twoInstancesPublisherAlongside: twoWithPublisher,
    targetCloseSecondsOneInstance: 5,
    targetMet: one.closeSeconds <= 5 && one.activeLeft === 0 && one.messagesOnBroker === EVENTS,
  }),
);
process.exit(0);
