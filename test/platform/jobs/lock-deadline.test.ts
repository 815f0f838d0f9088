import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { defineJob, InvalidJobError, LOCK_TTL_MARGIN_MS, lockTtlOf, RunDeadlineError, type JobDefinition } from '../../../src/platform/jobs/index.ts';
import { LEVEL, startReplica } from './support.ts';

const tdb: TestDatabase = await createTestDatabase();

const advisoryLocks = async (): Promise<number> => {
  const { rows } = await tdb.pool.query<{ n: number }>(
    `select count(*)::int as n from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`,
  );
  return rows[0]!.n;
};

/**
 * Replica a's first run ignores its signal and does not return until the test lets it go (a push
 * hung past every timeout); every other run returns at once.
 */
function hungJob(name: string, starts: { replica: string; signal: AbortSignal }[], replica: string, release: Promise<void>): JobDefinition {
  return defineJob({
    name,
    every: 50,
    singleRunner: true,
    maxRunMs: 100,
    lockTtlMs: 100 + LOCK_TTL_MARGIN_MS,
    async run({ signal }) {
      starts.push({ replica, signal });
      if (replica === 'a' && starts.filter((x) => x.replica === 'a').length === 1) await release;
      return { done: 1 };
    },
  });
}

test('a single-runner run still going at its LockTtl is abandoned: aborted first, then its lock released, logged and counted; another replica takes over', async (t) => {
  let letGo!: () => void;
  const release = new Promise<void>((resolve) => (letGo = resolve));
  t.after(() => letGo());
  const a = startReplica(t, tdb);
  const b = startReplica(t, tdb);
  const starts: { replica: string; signal: AbortSignal }[] = [];
  a.runner.register(hungJob('hung', starts, 'a', release));
  b.runner.register(hungJob('hung', starts, 'b', release));
  await a.runner.start();
  await waitFor('replica a to hold the lock', () => starts.length === 1);
  await b.runner.start();

  const hung = starts[0]!;
  await waitFor('the run aborted at its deadline, the margin before the LockTtl', () => hung.signal.aborted, 5000);
  assert.ok(hung.signal.reason instanceof RunDeadlineError);
  assert.equal(starts.length, 1, 'nobody else runs while the lock is held');
  assert.equal(await advisoryLocks(), 1);

  await waitFor('replica b to run the job once a is abandoned', () => starts.some((s) => s.replica === 'b'), 10_000);
  // Replica a releases the lock before it records the run, so b may start before a's line is written.
  const abandonedLine = () => a.logs.find((l) => l.msg === 'job run abandoned past its lock deadline');
  await waitFor('the abandonment to be logged', () => abandonedLine() !== undefined, 5000);
  const line = abandonedLine()!;
  assert.equal(line.level, LEVEL.error);
  assert.deepEqual([line.job, line.lockTtlMs], ['hung', 100 + LOCK_TTL_MARGIN_MS]);
  assert.equal(typeof line.jobRunId, 'string');
  assert.equal(await metricValue(a.registry, 'job_runs_abandoned_total', { job: 'hung' }), 1);
  assert.equal(await metricValue(b.registry, 'job_runs_abandoned_total', { job: 'hung' }), 0);

  letGo();
  await waitFor('the abandoned run, let go, to be noted', () => a.logs.some((l) => l.msg === 'abandoned job run returned'));
});

test('the replica whose run was abandoned runs the job again at its next tick', async (t) => {
  const starts: { replica: string; signal: AbortSignal }[] = [];
  let letGo!: () => void;
  const release = new Promise<void>((resolve) => (letGo = resolve));
  t.after(() => letGo());
  const a = startReplica(t, tdb);
  a.runner.register(hungJob('hung-alone', starts, 'a', release));
  await a.runner.start();
  await waitFor('a second run on the same replica', () => starts.length >= 2, 10_000);
  assert.equal(await metricValue(a.registry, 'job_runs_abandoned_total', { job: 'hung-alone' }), 1);
  await waitFor('its lock released after the second run', async () => (await advisoryLocks()) === 0);
});

test('LockTtl: the default is 30 s or twice maxRunMs plus the margin; the retired MESSENGER_REALTIME_LOCK_TTL fails at start naming MaxRunDuration; one on a job that is not single-runner fails at register', (t) => {
  assert.equal(lockTtlOf({ singleRunner: true }), 30_000);
  assert.equal(lockTtlOf({ singleRunner: true, maxRunMs: 5000 }), 30_000);
  assert.equal(lockTtlOf({ singleRunner: true, maxRunMs: 60_000 }), 120_000 + LOCK_TTL_MARGIN_MS);
  assert.equal(lockTtlOf({ singleRunner: true, maxRunMs: 5000, lockTtlMs: 9000 }), 9000);
  const a = startReplica(t, tdb);
  const base = { every: 1000, run: async () => {} };
  assert.throws(
    () => loadConfig({ MESSENGER_REALTIME_LOCK_TTL: '30s' }),
    (err: unknown) => err instanceof ConfigError && /MESSENGER_REALTIME_LOCK_TTL: replaced by MESSENGER_REALTIME_MAX_RUN_DURATION/.test(err.message),
  );
  assert.throws(() => a.runner.register({ ...base, name: 'not-single', lockTtlMs: 30_000 }), (err: unknown) => err instanceof InvalidJobError && /lockTtlMs is for single-runner jobs/.test(err.message));
  a.runner.register({ ...base, name: 'fine', singleRunner: true, maxRunMs: 5000, lockTtlMs: 5000 + LOCK_TTL_MARGIN_MS });
});
