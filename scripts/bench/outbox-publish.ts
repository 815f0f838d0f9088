/**
 * Outbox → Kafka benchmark. `node scripts/bench/outbox-publish.ts` (needs KAFKA_BROKERS, e.g.
 * `eval "$(bash scripts/services.sh up)"` first). Starts its own embedded PostgreSQL on a free port
 * under /tmp and prints ONE JSON line on stdout (progress and logs go to stderr):
 *   (a) throughput: 100,000 events of 1 KiB enqueued first, then the time the publisher takes to
 *       drain them to Kafka (target ≥ 20,000 events/s);
 *   (b) latency from enqueue commit to the consumer's handler (through the consumer runner), at a
 *       steady 1,000 events/s for 30 s, one event per transaction, with the publisher run by the
 *       real job runner woken by NOTIFY (target p95 < 50 ms).
 * The writers of (b) run in a worker thread by default (BENCH_WRITERS=thread): they stand for the
 * request handlers of the app and of other replicas, and on this machine their socket syscalls
 * alone saturate one event loop. BENCH_WRITERS=main puts them on the publisher's event loop.
 * Settings: BENCH_EVENTS (100000), BENCH_BATCH_SIZE (2000), BENCH_RATE (1000), BENCH_SECONDS (30),
 * KAFKA_CLIENT (kafkajs | platformatic: the bus's client, named in the JSON line), BENCH_PG_FAST=1 (fsync off as in the tests; default keeps PostgreSQL's durable defaults),
 * BENCH_PROFILE_DIR (writes a CPU profile of the drain of (a) there), BENCH_IDLE_WAIT_MS (250, the
 * publisher job's idle wait in (b)).
 */
import { randomBytes } from 'node:crypto';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Kafka, logLevel } from 'kafkajs';
import { createDb, createPool, migrateDatabase, type Db } from '../../src/platform/db/index.ts';
import { Registry } from '../../src/platform/observability/metrics.ts';
import { createKafkaBus } from '../../src/platform/events/kafka-bus.ts';
import { topicsToCreate } from '../../src/platform/events/topics.ts';
import { enqueue, type NewEvent } from '../../src/platform/outbox/enqueue.ts';
import { createOutboxPublisher, outboxPublisherJob } from '../../src/platform/outbox/publisher.ts';
import { createJobRunner } from '../../src/platform/jobs/index.ts';
import { newId } from '../../src/platform/time.ts';
import { instrumentOutboxPath } from './outbox-breakdown.ts';
import { benchKafkaClient, benchLogger, machine, profiled, say, startBenchPostgres } from './support.ts';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const EVENTS = env('BENCH_EVENTS', 100_000);
const BATCH = env('BENCH_BATCH_SIZE', 2000);
const RATE = env('BENCH_RATE', 1000);
const SECONDS = env('BENCH_SECONDS', 30);
/** The publisher job's idle wait in milliseconds (the app's default). */
const IDLE_WAIT = env('BENCH_IDLE_WAIT_MS', 250);
const WRITERS = process.env.BENCH_WRITERS === 'main' ? 'main' : 'thread';
const TOPIC = 'pin.bench.outbox.v1';
const LATENCY_TOPIC = 'pin.bench.latency.v1';
const log = benchLogger('error');
/** Wall-clock ms comparable across threads (each thread's performance.now() has its own origin). */
const nowMs = () => performance.timeOrigin + performance.now();

const filler = 'x'.repeat(1024 - 80); // payload ≈ 1 KiB of JSON with the other fields
const event = (i: number, key: string, topic: string): NewEvent => ({
  topic,
  eventType: 'BenchEvent',
  aggregateType: 'Bench',
  aggregateId: key,
  occurredAt: new Date(),
  payload: { BenchId: newId(), Seq: i, Data: filler },
});

/** Steady writers: RATE single-event transactions per second; reports each commit time. */
async function writeSteadily(db: Db, onCommitted: (id: string, at: number) => void): Promise<void> {
  const total = RATE * SECONDS;
  const writes: Promise<unknown>[] = [];
  const started = performance.now();
  let issued = 0;
  while (issued < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * RATE) + 1);
    while (issued < due) {
      const i = issued++;
      const id = newId();
      writes.push(
        db
          .transaction((tx) => enqueue(tx, { ...event(i, `steady-${i % 300}`, LATENCY_TOPIC), messageId: id }))
          .then(() => onCommitted(id, nowMs())),
      );
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  await Promise.all(writes);
}

if (!isMainThread) {
  // Writer thread: its own pool and event loop; commit stamps are posted in small batches.
  const pool = createPool(workerData.url as string, 20, log);
  let pending: [string, number][] = [];
  const flush = () => {
    if (pending.length > 0) parentPort!.postMessage(pending);
    pending = [];
  };
  const timer = setInterval(flush, 20);
  await writeSteadily(createDb(pool), (id, at) => pending.push([id, at]));
  clearInterval(timer);
  flush();
  await pool.end();
  parentPort!.postMessage('done');
} else {
  await main();
}


async function main(): Promise<void> {
  const brokers = process.env.KAFKA_BROKERS;
  if (!brokers) {
    process.stderr.write('KAFKA_BROKERS is unset: eval "$(bash scripts/services.sh up)" first\n');
    process.exit(2);
  }
  const pgServer = await startBenchPostgres(log);
  // Writers, publisher and consumer each get their own pool, so a burst of request transactions
  // cannot queue in front of the publisher (as src/app.ts wires them).
  const pool = createPool(pgServer.url, 20, log);
  await migrateDatabase(pool);
  const db = createDb(pool);
  const publisherPool = createPool(pgServer.url, 3, log);
  const consumerPool = createPool(pgServer.url, 6, log);

  const prefix = `bench${randomBytes(3).toString('hex')}.`;
  const bus = createKafkaBus({ client: benchKafkaClient, brokers: brokers.split(','), clientId: 'outbox-bench', log });
  // kafkajs only: the per-part breakdown of (b) hooks kafkajs's clients.
  const breakdown = benchKafkaClient === 'kafkajs' ? instrumentOutboxPath(bus) : undefined;
  await bus.start();
  await bus.ensureTopics(topicsToCreate([TOPIC, LATENCY_TOPIC].map((name) => ({ name, partitions: 6, consumed: true })), { prefix }));

  // (a) throughput
  say(`enqueueing ${EVENTS} events`);
  for (let i = 0; i < EVENTS; i += 1000) {
    const n = Math.min(1000, EVENTS - i);
    await db.transaction((tx) => enqueue(tx, Array.from({ length: n }, (_, j) => event(i + j, `agg-${(i + j) % 500}`, TOPIC))));
  }
  await pool.query('vacuum analyze platform.outbox');
  const publisher = createOutboxPublisher({
    db: createDb(publisherPool),
    bus,
    log,
    registry: new Registry(),
    batchSize: BATCH,
    maxRunMs: 600_000,
    pollIntervalMs: 1000,
    topicPrefix: prefix,
  });
  say(`draining with batch size ${BATCH}`);
  const ctx = { jobRunId: newId(), signal: new AbortController().signal, log, now: () => new Date() };
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let published = 0;
  await profiled('outbox-drain', async () => {
    for (;;) {
      const counts = await publisher.publishPending(ctx);
      if (counts.failed > 0) throw new Error(`publish failures: ${JSON.stringify(counts)}`);
      if (counts.published === 0) break;
      published += counts.published;
    }
  });
  const drainSeconds = (performance.now() - t0) / 1000;
  // CPU the publisher's process spent (user + system): comparable across runs on a busy machine.
  const { user, system } = process.cpuUsage(cpu0);
  const drainCpuSeconds = (user + system) / 1e6;
  say(`published ${published} in ${drainSeconds.toFixed(2)} s`);

  // (b) latency at a steady rate: both ends stamped, joined at the end.
  const committedAt = new Map<string, number>();
  const handledAt = new Map<string, number>();
  breakdown?.start();
  const registry = new Registry();
  const consumer = await bus.subscribe(
    {
      name: 'bench-consumer',
      topic: LATENCY_TOPIC,
      groupId: 'bench-consumer',
      eventTypes: ['BenchEvent'],
      partitionsConcurrently: 6,
      // Stamped in the handler; the handler transaction's commit follows.
      handle: async (e) => {
        const at = nowMs();
        handledAt.set(e.messageId, at);
        breakdown?.handled(e.messageId, at);
      },
    },
    { db: createDb(consumerPool), log, registry, topicPrefix: prefix },
  );
  const publisherDb = createDb(publisherPool);
  const runner = createJobRunner({ db: publisherDb, databaseUrl: pgServer.url, log, registry });
  runner.register(
    outboxPublisherJob({ db: publisherDb, bus, log, registry, batchSize: BATCH, maxRunMs: 5000, idleWaitMs: IDLE_WAIT, pollIntervalMs: 1000, topicPrefix: prefix }),
  );
  await runner.start();
  say(`steady ${RATE} events/s for ${SECONDS} s, one event per transaction, writers ${WRITERS === "main" ? "on the main thread" : "in a worker thread"}`);
  const elu = performance.eventLoopUtilization();
  const started = performance.now();
  if (WRITERS === 'main') {
    await writeSteadily(db, (id, at) => committedAt.set(id, at));
  } else {
    const worker = new Worker(new URL(import.meta.url), { workerData: { url: pgServer.url } });
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (m: [string, number][] | 'done') => {
        if (m === 'done') resolve();
        else for (const [id, at] of m) committedAt.set(id, at);
      });
      worker.on('error', reject);
    });
  }
  const total = RATE * SECONDS;
  const deadline = performance.now() + 30_000;
  while (handledAt.size < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const elapsed = (performance.now() - started) / 1000;
  const loopUtilization = performance.eventLoopUtilization(elu).utilization;

  // Publisher side: outbox insert (writer transaction start, so it includes the writer's own
  // commit) → marked published.
  const { rows: publishLag } = await pool.query<Record<string, number>>(
    `select percentile_cont(0.5) within group (order by ms) as p50, percentile_cont(0.95) within group (order by ms) as p95
       from (select extract(epoch from published_at - created_at) * 1000 as ms from platform.outbox where topic = $1) x`,
    [LATENCY_TOPIC],
  );
  await runner.stop();
  await consumer.stop();
  await bus.stop();
  const admin = new Kafka({ clientId: 'outbox-bench', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.deleteTopics({ topics: (await admin.listTopics()).filter((t) => t.startsWith(prefix)) }).catch(() => undefined);
  await admin.deleteGroups([`${prefix}bench-consumer`]).catch(() => undefined);
  await admin.disconnect();
  await Promise.all([pool.end(), publisherPool.end(), consumerPool.end()]);
  await pgServer.stop();

  const latencies = [...committedAt].flatMap(([id, at]) => {
    const handled = handledAt.get(id);
    return handled === undefined ? [] : [handled - at];
  });
  latencies.sort((a, b) => a - b);
  const round = (v: number | undefined) => Number((v ?? NaN).toFixed(1));
  const pct = (p: number) => round(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]);
  console.log(
    JSON.stringify({
      bench: 'outbox-publish',
      client: benchKafkaClient,
      machine: machine(),
      postgres: { durability: pgServer.durability },
      throughput: {
        events: published,
        payloadBytes: 1024,
        batchSize: BATCH,
        seconds: round(drainSeconds),
        eventsPerSec: Math.round(published / drainSeconds),
        publisherCpuSeconds: round(drainCpuSeconds),
        publisherCpuMsPer1000Events: round((drainCpuSeconds * 1e6) / published),
        target: 20_000,
      },
      latency: {
        rate: RATE,
        seconds: SECONDS,
        writers: WRITERS,
        wallSeconds: round(elapsed),
        issued: total,
        measured: latencies.length,
        p50Ms: pct(50),
        p95Ms: pct(95),
        p99Ms: pct(99),
        maxMs: round(latencies.at(-1)),
        targetP95Ms: 50,
        insertToPublishedMs: { p50: round(Number(publishLag[0]?.p50)), p95: round(Number(publishLag[0]?.p95)) },
        publisherEventLoopUtilization: Number(loopUtilization.toFixed(2)),
        ...(breakdown ? { breakdown: breakdown.report(committedAt) } : {}),
      },
    }),
  );
  process.exit(0);
}
