import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { killLoop, type KillLoopResult } from './support/chaos.ts';
import { createRng, faultSeed, phaseClock, printSummary } from './support/seed.ts';
import { createStack, type Stack } from './support/stack.ts';
import { runScenario, stopAndDrain, type Workload } from './support/workload.ts';
import { activityWorkload } from './support/workloads/activity.ts';
import { fanOutWorkload } from './support/workloads/fanout.ts';
import { notificationsWorkload } from './support/workloads/notifications.ts';
import { outboxWorkload } from './support/workloads/outbox.ts';
import { realtimeWorkload } from './support/workloads/realtime.ts';
import { createUsers, userSyncWorkload } from './support/workloads/user-sync.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The fault suite: every worker under load while the process running them is SIGKILLed
 * at random points and restarted — until each worker was killed 20 times in a life in which it was
 * working — then left to drain; each worker's seed invariant is checked.
 * A second replica without jobs (JOBS_ENABLED=false) serves the REST load and Bob's hub socket, so
 * the load goes on while the worker process is dead, as behind a load balancer. Replay a failure
 * with FAULT_SEED=<seed from its summary line>.
 */

const KILLS = 20;
/** Lives killed at most while waiting for each worker's 20 working kills (the sparsest load sets the pace). */
const MAX_LIVES = 60;
const USERS = 30;
const seed = faultSeed();
const FAULTS = [
  'sigkill-outbox-publisher',
  'sigkill-activity-closer',
  'sigkill-access-fanout',
  'sigkill-realtime-dispatch',
  'sigkill-notifications',
  'sigkill-user-sync-consumer',
] as const;

interface Outcome {
  run: KillLoopResult;
  workloads: Workload[];
  drainError: unknown;
}

async function scenario(): Promise<Outcome> {
  const stack: Stack = await createStack();
  const phase = phaseClock();
  const front = await stack.start('front', { jobs: false });
  const first = await stack.start('worker-0');
  const users = await createUsers(stack, front, USERS);
  await waitFor(
    'the user replica of every user (the chat needs its members)',
    async () => (await stack.database.pool.query(`select 1 from messenger.users where id = any($1)`, [users])).rowCount === USERS,
    60_000,
  );
  // Each workload its own stream of the seed, so the kill schedule stays the same whatever the load draws.
  const workloads: Workload[] = [
    outboxWorkload(stack),
    activityWorkload(stack, front),
    await fanOutWorkload(stack, front, users),
    await realtimeWorkload(stack, front, users[0]!, users[1]!),
    await notificationsWorkload(stack, front, createRng(seed + 1)),
    userSyncWorkload(stack, front, createRng(seed + 2), users),
  ];
  phase('setup');
  try {
    const run = await killLoop({
      rng: createRng(seed),
      kills: KILLS,
      maxLives: MAX_LIVES,
      first,
      start: (life) => stack.start(`worker-${life}`),
      uptimeMs: [300, 4000],
      progress: () => Promise.all(workloads.map((w) => w.progress())),
    });
    phase(`${run.kills} kills, working kills per worker ${run.workingKills.join(',')} (restarts took ${run.startsMs.join(',')} ms)`);
    const drainError = await stopAndDrain(workloads);
    phase('drain');
    return { run, workloads, drainError };
  } finally {
    for (const w of workloads) await w.stop();
  }
}

const outcome = await runScenario(scenario);

describe(`SIGKILL of the worker process at random points, ${KILLS} while each worker works (seed ${seed})`, () => {
  for (const fault of FAULTS) {
    test(fault, async () => {
      const { run, workloads, drainError } = outcome();
      const index = workloads.findIndex((w) => w.fault === fault);
      const verdict = await workloads[index]!.verdict({ kills: run.kills });
      const workingKills = run.workingKills[index]!;
      printSummary({ fault, seed, kills: workingKills, expected: verdict.expected, seen: verdict.seen, duplicated: verdict.duplicated });
      assert.ok(verdict.expected > 0, 'the load produced nothing to check');
      assert.ok(workingKills >= KILLS, `killed ${workingKills} times while working (of ${run.kills} kills), fewer than ${KILLS}`);
      assert.deepEqual(verdict.problems, [], `seed ${seed}, lives (ms) ${run.uptimesMs.join(',')}${drainError ? `; ${String(drainError)}` : ''}`);
      assert.equal(verdict.seen, verdict.expected);
    });
  }
});
