import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRng, faultSeed, phaseClock, printSummary } from './support/seed.ts';
import { createStack, type Replica, type Stack } from './support/stack.ts';
import { runScenario, stopAndDrain, type Workload } from './support/workload.ts';
import { activityWorkload } from './support/workloads/activity.ts';
import { fanOutWorkload } from './support/workloads/fanout.ts';
import { notificationsWorkload } from './support/workloads/notifications.ts';
import { outboxWorkload } from './support/workloads/outbox.ts';
import { realtimeWorkload } from './support/workloads/realtime.ts';
import { createUsers, userSyncWorkload } from './support/workloads/user-sync.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Two replicas on one database, broker and Redis, both running every job, under the
 * same loads as the kill suite; one is SIGKILLed while it holds the realtime dispatcher's single-
 * runner lock. Nothing may be lost, and repeats stay within what the one kill allows (a row taken
 * by both replicas at once would show as a repeat beyond it); the survivor must take over every
 * frequent single-runner job within the seed's LockTtl (30 s): the killed session's advisory locks
 * go with it.
 */

const USERS = 20;
const LOCK_TTL_MS = 30_000;
const REALTIME_JOB = 'messenger-realtime-dispatch';
const FAULTS = ['outbox-publisher', 'activity-closer', 'access-fanout', 'realtime-dispatch', 'notifications', 'user-sync-consumer'] as const;
const seed = faultSeed();
const rng = createRng(seed);

/** Single-runner jobs that run at least this often are expected back within LockTtl of the kill. */
const FREQUENT_MS = 10_000;
/** Among them, the ones whose loads this scenario drives (so the list cannot come back empty unnoticed). */
const MUST_TAKE_OVER = [REALTIME_JOB, 'outbox-publisher', 'notifications-retry-worker'];

interface JobView {
  name: string;
  running: boolean;
  singleRunner: boolean;
  schedule: { every?: number };
  lastRunAt: string | null;
}

const jobsOf = async (stack: Stack, r: Replica): Promise<JobView[]> =>
  (await stack.call<{ jobs: JobView[] }>(r, 'GET', '/api/ops/jobs').catch(() => undefined))?.body.jobs ?? [];
const jobRunning = async (stack: Stack, r: Replica, name: string) => (await jobsOf(stack, r)).find((j) => j.name === name)?.running === true;

interface Outcome {
  workloads: Workload[];
  /** Per frequent single-runner job: ms from the kill until a run of it by the survivor was recorded (Infinity: none within LockTtl). */
  takeoverMs: Map<string, number>;
  drainError: unknown;
}

/** Waits for a run of every frequent single-runner job recorded after `killedAt`, within LockTtl. */
async function takeovers(stack: Stack, survivor: Replica, killedAt: number): Promise<Map<string, number>> {
  const frequent = (await jobsOf(stack, survivor)).filter((j) => j.singleRunner && (j.schedule.every ?? Infinity) <= FREQUENT_MS).map((j) => j.name);
  const taken = new Map<string, number>();
  await waitFor(
    `the survivor to run every frequent single-runner job (${frequent.join(', ')})`,
    async () => {
      for (const j of await jobsOf(stack, survivor)) {
        const at = j.lastRunAt === null ? NaN : Date.parse(j.lastRunAt);
        // A run recorded after the kill: job_state is shared and written only by runs that held the lock
        // (`running` would also be true for a refused attempt). Runs end within their MaxRunDuration, < LockTtl.
        if (frequent.includes(j.name) && !taken.has(j.name) && at > killedAt) taken.set(j.name, Date.now() - killedAt);
      }
      return taken.size === frequent.length;
    },
    LOCK_TTL_MS,
  ).catch(() => undefined); // the test names the jobs not taken over
  for (const name of frequent) if (!taken.has(name)) taken.set(name, Infinity);
  return taken;
}

async function scenario(): Promise<Outcome> {
  const stack = await createStack();
  const phase = phaseClock();
  // `survivor` also serves the REST load and Bob's hub socket; `victim` is killed.
  const [survivor, victim] = await Promise.all([stack.start('survivor'), stack.start('victim')]);
  const users = await createUsers(stack, survivor, USERS);
  await waitFor(
    'the user replica of every user',
    async () => (await stack.database.pool.query(`select 1 from messenger.users where id = any($1)`, [users])).rowCount === USERS,
    60_000,
  );
  const workloads: Workload[] = [
    outboxWorkload(stack),
    activityWorkload(stack, survivor),
    await fanOutWorkload(stack, survivor, users),
    await realtimeWorkload(stack, survivor, users[0]!, users[1]!),
    await notificationsWorkload(stack, survivor, createRng(seed + 1)),
    userSyncWorkload(stack, survivor, createRng(seed + 2), users),
  ];
  phase('setup');
  try {
    // Both replicas share the load for a random while, then the victim dies holding the dispatch lock.
    await sleep(rng.int(2000, 6000));
    await waitFor('the victim to be running the realtime dispatcher', () => jobRunning(stack, victim, REALTIME_JOB), 30_000);
    await victim.kill();
    const killedAt = Date.now();
    const takeoverMs = await takeovers(stack, survivor, killedAt);
    phase(`kill and takeover (${[...takeoverMs].map(([name, ms]) => `${name} ${ms} ms`).join(', ')})`);
    await sleep(3000); // load after the takeover, served by the survivor alone
    const drainError = await stopAndDrain(workloads);
    phase('drain');
    return { workloads, takeoverMs, drainError };
  } finally {
    for (const w of workloads) await w.stop();
  }
}

const ok = await runScenario(scenario);

describe(`two replicas, one SIGKILLed mid-run (seed ${seed})`, () => {
  test('the survivor takes over every frequent single-runner job within LockTtl', () => {
    const { takeoverMs } = ok();
    for (const name of MUST_TAKE_OVER) assert.ok(takeoverMs.has(name), `${name} is not among the frequent single-runner jobs: ${[...takeoverMs.keys()].join(', ')}`);
    const late = [...takeoverMs].filter(([, ms]) => !(ms < LOCK_TTL_MS));
    assert.deepEqual(late, [], 'jobs with no run on the survivor within LockTtl of the kill');
  });

  for (const name of FAULTS) {
    test(`${name}: nothing lost, no repeat beyond what the kill allows`, async () => {
      const { workloads, drainError } = ok();
      const w = workloads.find((x) => x.fault === `sigkill-${name}`)!;
      const verdict = await w.verdict({ kills: 1 });
      const fault = `two-replicas-${name}`;
      printSummary({ fault, seed, kills: 1, expected: verdict.expected, seen: verdict.seen, duplicated: verdict.duplicated });
      assert.ok(verdict.expected > 0, 'the load produced nothing to check');
      assert.deepEqual(verdict.problems, [], `seed ${seed}${drainError ? `; ${String(drainError)}` : ''}`);
      assert.equal(verdict.seen, verdict.expected);
    });
  }
});
