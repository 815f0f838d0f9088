/**
 * AccessFanOutJob benchmark (seed 003 SLO: a role of ≤ 50k users fanned out in ≤ 5 min).
 * `node scripts/bench/access-fanout.ts` (needs KAFKA_BROKERS, e.g. `eval "$(bash scripts/services.sh up)"`).
 * Starts its own embedded PostgreSQL on a free port under /tmp, seeds a role with BENCH_USERS users
 * (each also holding 3 other assignments), then times, with the worker and the outbox publisher run
 * by the real job runner (NOTIFY-woken, as in production):
 *   - set-role-permissions (queues one AccessFanOutTask),
 *   - until the task is Completed (target ≤ 15 s),
 *   - until every user's UserAccessChanged is in Kafka (target ≤ 30 s),
 * once with ONE worker instance, then again (a second role change) with TWO instances sharing the
 * role: the task splits on its first page into UserId-range sub-tasks of RangeSize users
 * (IDENTITY_DEFAULTS.fanOutRangeSize), each leased on its own. The second
 * instance is a second job runner with its own pool in this process, so the two share one event
 * loop and the machine's cores with PostgreSQL and the broker: on separate hosts they scale better.
 * Prints ONE JSON line. Settings: BENCH_USERS (50000), BENCH_BATCH_SIZE (500, the default BatchSize),
 * BENCH_RANGE_SIZE (5000, the default RangeSize), BENCH_PG_FAST=1 (fsync off, as the tests run;
 * default keeps durability on).
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { loadConfig } from '../../src/config.ts';
import { TOPICS } from '../../src/event-topics.ts';
import { createDb, createPool, migrateDatabase } from '../../src/platform/db/index.ts';
import { createKafkaBus } from '../../src/platform/events/kafka-bus.ts';
import { topicsToCreate } from '../../src/platform/events/topics.ts';
import { createJobRunner } from '../../src/platform/jobs/index.ts';
import { Registry } from '../../src/platform/observability/metrics.ts';
import { outboxPublisherJob } from '../../src/platform/outbox/publisher.ts';
import { OUTBOX_DEFAULTS } from '../../src/platform/outbox/defaults.ts';
import { systemClock } from '../../src/platform/time.ts';
import { accessFanOutJob } from '../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { identitySettingsFrom, type IdentityContext } from '../../src/modules/identity/context.ts';

import { createIdentityMetrics } from '../../src/modules/identity/metrics.ts';
import { setRolePermissions } from '../../src/modules/identity/roles/role-operations.ts';
import { benchLogger, cpuMeter, machine, say, startBenchPostgres } from './support.ts';

const USERS = Number(process.env.BENCH_USERS ?? 50_000);
const brokers = process.env.KAFKA_BROKERS;
if (!brokers) {
  process.stderr.write('KAFKA_BROKERS is unset: eval "$(bash scripts/services.sh up)" first\n');
  process.exit(2);
}
const config = loadConfig({
  ...process.env,
  IDENTITY_ACCESS_FANOUT_BATCH_SIZE: process.env.BENCH_BATCH_SIZE,
});
const log = benchLogger('warn');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


const pgServer = await startBenchPostgres(log);
const pool = createPool(pgServer.url, 20, log);
await migrateDatabase(pool);
const db = createDb(pool);

say(`seeding ${USERS} users, each with the big role and 3 other assignments`);
const ROLES = ['bench-big', 'bench-other-1', 'bench-other-2', 'bench-other-3'];
await pool.query(
  `insert into identity.role_definitions (id, code, name, company_id, status, version, created_at, updated_at)
   select gen_random_uuid(), code, code, null, 'Active', 1, now(), now() from unnest($1::text[]) as code`,
  [ROLES],
);
const { rows: roles } = await pool.query<{ id: string; code: string }>(`select id, code from identity.role_definitions`);
const roleId = (code: string) => roles.find((r) => r.code === code)!.id;
await pool.query(
  `insert into identity.users (id, first_name, last_name, phone_number, status, type, company_id, version, created_at, updated_at)
   select gen_random_uuid(), 'Bench', 'User', '+7999' || lpad(i::text, 7, '0'), 'Active', 'CompanyEmployee',
          '0190a000-0000-7000-8000-0000000000c1', 1, now(), now()
     from generate_series(1, $1) as i`,
  [USERS],
);
await pool.query(
  `insert into identity.role_assignments (id, role_id, user_id, scope_type, scope_organization_id, status, version, granted_at, updated_at)
   select gen_random_uuid(), r.id, u.id,
          case when r.code = 'bench-other-2' then 'Organization' else 'Platform' end,
          case when r.code = 'bench-other-2' then '0190a000-0000-7000-8000-00000000a001'::uuid end,
          'Active', 1, now(), now()
     from identity.users u cross join identity.role_definitions r`,
);
await pool.query('vacuum analyze');

const prefix = `bench${randomBytes(3).toString('hex')}.`;
const bus = createKafkaBus({ brokers: brokers.split(','), clientId: 'access-fanout-bench', log });
await bus.start();
await bus.ensureTopics(topicsToCreate([{ name: TOPICS.identityAccess, partitions: 6, consumed: false }], { prefix }));
const kafkaTopic = `${prefix}${TOPICS.identityAccess}`;
const admin = new Kafka({ clientId: 'access-fanout-bench', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
await admin.connect();
// A fresh topic's partitions may still be electing their leader (NOT_LEADER_FOR_PARTITION, retriable): ask again.
async function inKafka(): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await admin.fetchTopicOffsets(kafkaTopic)).reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
    } catch (err) {
      if (attempt >= 20 || (err as { retriable?: boolean }).retriable !== true) throw err;
      await sleep(250);
    }
  }
}

const registry = new Registry();
const fromConfig = identitySettingsFrom(config);
// BENCH_RANGE_SIZE tries another range size than the fixed IDENTITY_DEFAULTS.fanOutRangeSize.
const settings = process.env.BENCH_RANGE_SIZE
  ? { ...fromConfig, fanOut: { ...fromConfig.fanOut, rangeSize: Number(process.env.BENCH_RANGE_SIZE) } }
  : fromConfig;
const ctx: IdentityContext = { db, clock: systemClock, log, metrics: createIdentityMetrics(registry, db, systemClock), settings };
const runner = createJobRunner({ db, databaseUrl: pgServer.url, log, registry });
runner.register(accessFanOutJob({ db, metrics: ctx.metrics, settings: settings.fanOut }));
runner.register(
  outboxPublisherJob({
    db,
    bus,
    log,
    registry,
    batchSize: OUTBOX_DEFAULTS.outboxBatchSize,
    maxRunMs: OUTBOX_DEFAULTS.outboxMaxRunMs,
    pollIntervalMs: config.OUTBOX_POLLING_INTERVAL,
    topicPrefix: prefix,
  }),
);
await runner.start();

/** The role's fan-out: the queued task and its sub-tasks — how many, how many done, users sent. */
async function fanOutState(taskId: string) {
  const { rows } = await pool.query<{ tasks: number; completed: number; processed: number; attempts: number }>(
    `select count(*)::int as tasks, count(*) filter (where status = 'Completed')::int as completed,
            coalesce(sum(processed_count), 0)::int as processed, coalesce(sum(attempt_count), 0)::int as attempts
       from identity.access_fanout_tasks where id = $1 or parent_id = $1`,
    [taskId],
  );
  return rows[0]!;
}

/** One role change, timed until its fan-out is Completed and until its events are all in Kafka. */
async function fanOutRound(instances: number, permissions: string[]) {
  const kafkaBefore = await inKafka();
  say(`set-role-permissions on a role of ${USERS} users (batch size ${settings.fanOut.batchSize}, range size ${settings.fanOut.rangeSize}, ${instances} instance(s))`);
  const t0 = performance.now();
  const cpu = cpuMeter(pgServer.dataDir);
  const { fanOut } = await setRolePermissions(ctx, roleId('bench-big'), permissions);
  const setMs = performance.now() - t0;
  if (fanOut.mode !== 'queued' || !fanOut.taskId) throw new Error(`expected a queued fan-out, got ${JSON.stringify(fanOut)}`);
  let completedAt: number | null = null;
  let kafkaAt: number | null = null;
  const deadline = t0 + 600_000;
  while ((completedAt === null || kafkaAt === null) && performance.now() < deadline) {
    if (completedAt === null) {
      const st = await fanOutState(fanOut.taskId);
      if (st.tasks === st.completed) completedAt = performance.now();
    }
    if (kafkaAt === null && (await inKafka()) - kafkaBefore >= USERS) kafkaAt = performance.now();
    await sleep(20);
  }
  const cpuPer1000Users = cpu.per1000(USERS);
  const seconds = (at: number | null) => (at === null ? null : Number(((at - t0) / 1000).toFixed(2)));
  const st = await fanOutState(fanOut.taskId);
  return {
    instances,
    setRolePermissionsMs: Number(setMs.toFixed(1)),
    tasks: { total: st.tasks, completed: st.completed, processedCount: st.processed, attempts: st.attempts },
    completedSeconds: seconds(completedAt),
    allInKafkaSeconds: seconds(kafkaAt),
    messagesInKafka: (await inKafka()) - kafkaBefore,
    cpuMsPer1000Users: cpuPer1000Users,
    usersPerSecond: completedAt === null ? null : Math.round(USERS / ((completedAt - t0) / 1000)),
    ok: completedAt !== null && kafkaAt !== null,
  };
}

const one = await fanOutRound(1, ['crm.deals.read', 'crm.deals.write']);

// The second instance: its own pool, job runner and metrics, the fan-out worker only.
const pool2 = createPool(pgServer.url, 20, log);
const db2 = createDb(pool2);
const registry2 = new Registry();
const runner2 = createJobRunner({ db: db2, databaseUrl: pgServer.url, log, registry: registry2 });
runner2.register(accessFanOutJob({ db: db2, metrics: createIdentityMetrics(registry2, db2, systemClock), settings: settings.fanOut }));
await runner2.start();
const two = await fanOutRound(2, ['crm.deals.read']);

await runner2.stop();
await runner.stop();
await bus.stop();
await admin.deleteTopics({ topics: (await admin.listTopics()).filter((t) => t.startsWith(prefix)) }).catch(() => undefined);
await admin.disconnect();
await pool2.end();
await pool.end();
await pgServer.stop();

console.log(
  JSON.stringify({
    bench: 'access-fanout',
    machine: machine(),
    postgres: { durability: pgServer.durability },
    users: USERS,
    otherAssignmentsPerUser: 3,
    batchSize: settings.fanOut.batchSize,
    rangeSize: settings.fanOut.rangeSize,
    outboxBatchSize: OUTBOX_DEFAULTS.outboxBatchSize,
    oneInstance: one,
    twoInstances: two,
    speedup: one.completedSeconds && two.completedSeconds ? Number((one.completedSeconds / two.completedSeconds).toFixed(2)) : null,
    targets: { completedSeconds: 15, allInKafkaSeconds: 30, sloSeconds: 300 },
  }),
);
process.exit(one.ok && two.ok ? 0 : 1);
