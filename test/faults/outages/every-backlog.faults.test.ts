import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDb, createPool } from '../../../src/platform/db/index.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { createRng, phaseClock, printSummary } from '../support/seed.ts';
import { createStack, type Replica, type Stack } from '../support/stack.ts';
import { runScenario, stopAndDrain, type Workload } from '../support/workload.ts';
import { activityWorkload } from '../support/workloads/activity.ts';
import { fanOutWorkload } from '../support/workloads/fanout.ts';
import { notificationsWorkload } from '../support/workloads/notifications.ts';
import { outboxWorkload } from '../support/workloads/outbox.ts';
import { realtimeWorkload } from '../support/workloads/realtime.ts';
import { createUsers, userSyncWorkload } from '../support/workloads/user-sync.ts';
import { SCRAPE_HEADERS } from '../../support/secure-env.ts';
import { waitFor } from '../../support/wait.ts';
import { seeded, startPrivateKafka, startPrivatePostgres } from './support.ts';

/**
 * After an outage every backlog drains with nothing lost, for every worker at once: the
 * kill suite's six loads run against one replica on a broker and a PostgreSQL of the scenario's own;
 * the broker is stopped for 30 s, then PostgreSQL for 10 s, at seeded moments. The replica must
 * stay up through both (same process, /metrics answering, readiness naming the dependency), and
 * afterwards every worker's seed invariant holds, as after a kill: nothing lost, repeats within one
 * batch per outage. Requests refused while a dependency was down are not expected to arrive.
 */

const KAFKA_OUTAGE_MS = 30_000;
const POSTGRES_OUTAGE_MS = 10_000;
const USERS = 20;
const OUTAGES = 2;
const FAULT = 'outages-every-backlog';
const rng = seeded(FAULT);

interface Outcome {
  workloads: Workload[];
  drainError: unknown;
  /** What the replica answered while each dependency was down. */
  during: Record<'kafka' | 'postgres', { readyStatus: number[]; downSamples: number; metricsStatus: number[] }>;
  sameProcess: boolean;
  /** A REST write through the replica succeeded after both recoveries (the loads' refusals are excused only as outage effects). */
  writesAfterRecovery: boolean;
}

async function get(r: Replica, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${r.url}${path}`, { signal: AbortSignal.timeout(10_000), headers: SCRAPE_HEADERS });
  return { status: res.status, text: await res.text() };
}

/** Samples readiness and /metrics every second for `ms`; the replica must not die meanwhile. */
async function hold(r: Replica, ms: number, dependency: string): Promise<Outcome['during']['kafka']> {
  const seen = { readyStatus: [] as number[], downSamples: 0, metricsStatus: [] as number[] };
  const ends = Date.now() + ms;
  while (Date.now() < ends) {
    if (!r.alive()) throw new Error(`the replica died during the ${dependency} outage: ${r.service.log.text.slice(-2000)}`);
    const ready = await get(r, '/health/ready');
    seen.readyStatus.push(ready.status);
    const deps = (JSON.parse(ready.text) as { dependencies: Record<string, string> }).dependencies;
    if (deps[dependency] === 'down') seen.downSamples += 1;
    seen.metricsStatus.push((await get(r, '/metrics')).status);
    await sleep(Math.min(1000, Math.max(0, ends - Date.now())));
  }
  return seen;
}

async function scenario(): Promise<Outcome> {
  const phase = phaseClock();
  const [kafka, postgres] = await Promise.all([startPrivateKafka(), startPrivatePostgres()]);
  // The test's own pool on the scenario's PostgreSQL: it survives the restart (dead clients are dropped).
  const pool = createPool(postgres.url, 4, createLogger('fatal'));
  const database = { url: postgres.url, pool, db: createDb(pool), drop: () => pool.end() };
  const stack: Stack = await createStack({ database, brokers: [kafka.brokers] });
  // A 1 s connect timeout: a connection to the stopped server fails well within the outage.
  const replica = await stack.start('replica', { tuning: { kernel: { kafkaTopicPartitions: 2, databaseConnectTimeoutMs: 1000 } } });
  const pid = replica.service.child.pid;
  const users = await createUsers(stack, replica, USERS);
  await waitFor('the user replica of every user', async () => (await pool.query(`select 1 from messenger.users where id = any($1)`, [users])).rowCount === USERS, 60_000);
  const workloads: Workload[] = [
    outboxWorkload(stack),
    activityWorkload(stack, replica),
    await fanOutWorkload(stack, replica, users),
    await realtimeWorkload(stack, replica, users[0]!, users[1]!),
    await notificationsWorkload(stack, replica, createRng(rng.seed + 1)),
    userSyncWorkload(stack, replica, createRng(rng.seed + 2), users),
  ];
  phase('setup');
  try {
    await sleep(rng.int(2000, 6000));
    await kafka.stop();
    const duringKafka = await hold(replica, KAFKA_OUTAGE_MS, 'eventBus');
    await kafka.start();
    phase('kafka outage');
    await sleep(rng.int(2000, 6000));
    await postgres.stop();
    const duringPostgres = await hold(replica, POSTGRES_OUTAGE_MS, 'database');
    await postgres.start();
    phase('postgres outage');
    await sleep(rng.int(1000, 4000)); // load goes on across the recovery
    const writesAfterRecovery = await waitFor(
      'a REST write through the replica after the outages',
      () => createUsers(stack, replica, 1).then(() => true, () => false),
      30_000,
    ).then(() => true, () => false);
    const drainError = await stopAndDrain(workloads);
    phase('drain');
    return { workloads, drainError, during: { kafka: duringKafka, postgres: duringPostgres }, sameProcess: replica.alive() && replica.service.child.pid === pid, writesAfterRecovery };
  } finally {
    for (const w of workloads) await w.stop();
  }
}

const ok = await runScenario(scenario);

describe(`Kafka stopped ${KAFKA_OUTAGE_MS / 1000} s, then PostgreSQL ${POSTGRES_OUTAGE_MS / 1000} s, under every worker's load (seed ${rng.seed})`, () => {
  test('the replica stays up through both, /metrics answers, readiness names the dependency that is down', () => {
    const { during, sameProcess, writesAfterRecovery } = ok();
    assert.ok(sameProcess, 'the same process served before, during and after');
    assert.ok(writesAfterRecovery, 'REST writes succeed again after the outages');
    for (const [name, seen] of Object.entries(during)) {
      assert.ok(seen.metricsStatus.length > 0 && seen.metricsStatus.every((s) => s === 200), `${name}: /metrics answered ${seen.metricsStatus.join(',')}`);
      assert.ok(seen.downSamples > 0, `${name}: readiness never reported the dependency down`);
    }
    // Kafka is not required to serve (the outbox holds the events); the database is.
    assert.ok(during.kafka.readyStatus.every((s) => s === 200), `ready during the Kafka outage: ${during.kafka.readyStatus.join(',')}`);
    assert.ok(during.postgres.readyStatus.includes(503), `ready during the PostgreSQL outage: ${during.postgres.readyStatus.join(',')}`);
  });

  for (const fault of ['outbox-publisher', 'activity-closer', 'access-fanout', 'realtime-dispatch', 'notifications', 'user-sync-consumer']) {
    test(`${fault}: its backlog drained after the outages, nothing lost, repeats within one batch per outage`, async () => {
      const { workloads, drainError } = ok();
      const verdict = await workloads.find((w) => w.fault === `sigkill-${fault}`)!.verdict({ kills: OUTAGES, loadMayFail: true });
      printSummary({ fault: `outages-${fault}`, seed: rng.seed, kills: OUTAGES, expected: verdict.expected, seen: verdict.seen, duplicated: verdict.duplicated });
      assert.ok(verdict.expected > 0, 'the load produced nothing to check');
      assert.deepEqual(verdict.problems, [], `seed ${rng.seed}${drainError ? `; ${String(drainError)}` : ''}`);
      assert.equal(verdict.seen, verdict.expected);
    });
  }
});
