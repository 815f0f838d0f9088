import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRng, faultSeed, phaseClock, printSummary } from './support/seed.ts';
import { createStack, type Replica, type Stack } from './support/stack.ts';
import type { Workload } from './support/workload.ts';
import { activityWorkload } from './support/workloads/activity.ts';
import { fanOutWorkload } from './support/workloads/fanout.ts';
import { notificationsWorkload } from './support/workloads/notifications.ts';
import { outboxWorkload } from './support/workloads/outbox.ts';
import { realtimeWorkload } from './support/workloads/realtime.ts';
import { createUsers, userSyncWorkload } from './support/workloads/user-sync.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Issue 14, two replicas on one database, broker and Redis, both running every job, under the
 * same loads as the kill suite; one is SIGKILLed while it holds the realtime dispatcher's single-
 * runner lock. The multi-instance workers (closer, fan-out, dispatcher) must never take one row
 * twice, and the survivor must take over the single-runner jobs within the seed's LockTtl (30 s):
 * the killed session's advisory locks go with it.
 */

const USERS = 20;
const LOCK_TTL_MS = 30_000;
const REALTIME_JOB = 'messenger-realtime-dispatch';
const FAULTS = ['outbox-publisher', 'activity-closer', 'access-fanout', 'realtime-dispatch', 'notifications', 'user-sync-consumer'] as const;
const seed = faultSeed();
const rng = createRng(seed);

interface JobView {
  name: string;
  running: boolean;
}

const jobRunning = async (stack: Stack, r: Replica, name: string) =>
  (await stack.call<{ jobs: JobView[] }>(r, 'GET', '/api/ops/jobs').catch(() => undefined))?.body.jobs.find((j) => j.name === name)?.running === true;

interface Outcome {
  workloads: Workload[];
  takeoverMs: number;
  drainError: unknown;
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
    await waitFor('the survivor to run the realtime dispatcher', () => jobRunning(stack, survivor, REALTIME_JOB), LOCK_TTL_MS);
    const takeoverMs = Date.now() - killedAt;
    phase(`kill and takeover (${takeoverMs} ms)`);
    await sleep(3000); // load after the takeover, served by the survivor alone
    for (const w of workloads) await w.stop();
    let drainError: unknown;
    try {
      await waitFor('every backlog to drain', async () => (await Promise.all(workloads.map((w) => w.drained()))).every(Boolean), 150_000);
    } catch (err) {
      drainError = err;
    }
    phase('drain');
    return { workloads, takeoverMs, drainError };
  } finally {
    for (const w of workloads) await w.stop();
  }
}

// At module level, not in a before hook: the support's file-end cleanups (database, topics, child
// processes) registered inside a hook would run when the hook ends. A failed run fails every test.
const outcome: Outcome | Error = await scenario().catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
const ok = (): Outcome => {
  if (outcome instanceof Error) throw outcome;
  return outcome;
};

describe(`two replicas, one SIGKILLed mid-run (seed ${seed})`, () => {
  test('the survivor takes over the single-runner realtime dispatcher within LockTtl', () => {
    const { takeoverMs } = ok();
    assert.ok(takeoverMs < LOCK_TTL_MS, `took ${takeoverMs} ms`);
  });

  for (const name of FAULTS) {
    test(`${name}: nothing lost, nothing claimed twice`, async () => {
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
