import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import {
  defineJob,
  LOCK_APPLICATION_NAME,
  LockConnectionLostError,
  UnknownJobError,
  type JobDefinition,
} from '../../../src/platform/jobs/index.ts';
import { LEVEL, runsCounted, startReplica, within } from './support.ts';
import { waitFor } from '../../support/wait.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const tdb: TestDatabase = await createTestDatabase();

test('a single-runner job runs on one replica at a time; the other replica finds the lock busy and skips', async (t) => {
  const a = startReplica(t, tdb);
  const b = startReplica(t, tdb);
  let concurrent = 0;
  let maxConcurrent = 0;
  let runs = 0;
  const job: JobDefinition = {
    name: 'exclusive',
    every: 100,
    singleRunner: true,
    async run() {
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      runs++;
      try {
        await sleep(250); // longer than a tick, so the other replica's ticks land inside the run
      } finally {
        concurrent--;
      }
      return { processed: 1 };
    },
  };
  a.runner.register(job);
  b.runner.register(job);
  await Promise.all([a.runner.start(), b.runner.start()]);

  const skipped = async () =>
    (await runsCounted(a.registry, 'exclusive', 'skipped')) + (await runsCounted(b.registry, 'exclusive', 'skipped'));
  await waitFor('three runs and two lock-busy skips', async () => runs >= 3 && (await skipped()) >= 2);
  await Promise.all([a.runner.stop(), b.runner.stop()]);

  assert.equal(maxConcurrent, 1, 'two runs of a single-runner job overlapped');
  let notSkipped = 0;
  for (const r of [a, b]) {
    for (const outcome of ['success', 'failure', 'aborted']) notSkipped += await runsCounted(r.registry, 'exclusive', outcome);
  }
  const [info] = await a.runner.list();
  assert.equal(info?.runsTotal, notSkipped, 'job_state counts only runs that were not skipped');
});

test('when the holder loses its lock connection its run is aborted and the other replica takes over', async (t) => {
  const replicas = { a: startReplica(t, tdb), b: startReplica(t, tdb) };
  const starts: { replica: 'a' | 'b'; abortReason?: unknown }[] = [];
  const job = (replica: 'a' | 'b'): JobDefinition =>
    defineJob({
      name: 'takeover',
      every: 100,
      singleRunner: true,
      async run({ signal }) {
        const entry: (typeof starts)[number] = { replica };
        starts.push(entry);
        while (!signal.aborted) await sleep(10);
        entry.abortReason = signal.reason;
        // Winding down slowly: the other replica must not have to wait for this run to return.
        await waitFor('the other replica to take over', () => starts.some((s) => s.replica !== replica));
        return {};
      },
    });
  replicas.a.runner.register(job('a'));
  replicas.b.runner.register(job('b'));
  await replicas.a.runner.start();
  await waitFor('replica a to hold the lock', () => starts.length === 1);
  await replicas.b.runner.start();
  const holder = replicas.a;

  const pid = holder.runner.lockConnectionPid();
  assert.ok(pid, 'the holder has a lock connection');
  const app = await tdb.pool.query<{ application_name: string }>(
    'select application_name from pg_stat_activity where pid = $1',
    [pid],
  );
  assert.equal(app.rows[0]?.application_name, LOCK_APPLICATION_NAME);

  await tdb.pool.query('select pg_terminate_backend($1)', [pid]);

  await waitFor('the holder run to see its signal fire', () => starts[0]?.abortReason !== undefined);
  assert.ok(starts[0]?.abortReason instanceof LockConnectionLostError);
  await waitFor('replica b to take over', () => starts.some((s) => s.replica === 'b'));
  await waitFor('the aborted run to be logged', () =>
    holder.logs.some((l) => l.level === LEVEL.warn && l.msg === 'job run aborted' && l.job === 'takeover'),
  );
  assert.equal(await runsCounted(holder.registry, 'takeover', 'aborted'), 1);
  assert.ok(holder.logs.some((l) => l.level === LEVEL.error && l.msg.startsWith('job lock connection lost')));

  // The old holder reconnects lazily on its next tick and now finds the lock busy.
  await waitFor('the old holder to skip on a new lock connection', async () => (await runsCounted(holder.registry, 'takeover', 'skipped')) >= 1);
  assert.notEqual(holder.runner.lockConnectionPid(), pid);
  assert.equal(await runsCounted(holder.registry, 'takeover', 'failure'), 0);
  assert.equal(starts.filter((s) => s.replica === 'a').length, 1, 'replica a never ran it again while b held it');
});

test('runNow returns the run\'s counts, skips while another replica holds the lock, and list() shows job_state', async (t) => {
  const a = startReplica(t, tdb);
  const b = startReplica(t, tdb);
  const gate = Promise.withResolvers<void>();
  t.after(() => gate.resolve());
  let entered = false;
  const job: JobDefinition = {
    name: 'manual',
    every: 3_600_000,
    singleRunner: true,
    async run() {
      entered = true;
      await gate.promise;
      return { claimed: 2, sent: 2 };
    },
  };
  a.runner.register(job);
  b.runner.register(job);

  const pending = a.runner.runNow('manual');
  await waitFor('replica a to be inside the run', () => entered);
  assert.equal((await a.runner.list())[0]?.running, true);

  const skipped = await within('replica b to give up on the busy lock', b.runner.runNow('manual'));
  assert.equal(skipped.outcome, 'skipped');
  assert.equal(skipped.skipReason, 'lock_busy');
  assert.equal(await runsCounted(b.registry, 'manual', 'skipped'), 1);
  const again = await a.runner.runNow('manual');
  assert.equal(again.outcome, 'skipped', 'no second run of a job in one process');
  assert.equal(again.skipReason, 'already_running');
  const beforeFinish = (await b.runner.list())[0];
  assert.equal(beforeFinish?.runsTotal, 0, 'a skipped run writes no job_state');
  assert.equal(beforeFinish?.lastRunAt, null);

  gate.resolve();
  const done = await pending;
  assert.equal(done.outcome, 'success');
  assert.deepEqual(done.counts, { claimed: 2, sent: 2 });
  assert.match(done.jobRunId, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
  assert.equal(typeof done.durationMs, 'number');

  const [info] = await b.runner.list();
  assert.ok(info);
  assert.equal(info.name, 'manual');
  assert.deepEqual(info.schedule, { every: 3_600_000, description: 'every 1h' });
  assert.equal(info.singleRunner, true);
  assert.equal(info.running, false);
  assert.equal(info.lastOutcome, 'success');
  assert.deepEqual(info.lastCounts, { claimed: 2, sent: 2 });
  assert.equal(info.runsTotal, 1);
  assert.equal(info.failuresTotal, 0);
  assert.ok(info.lastRunAt instanceof Date && info.lastSuccessAt instanceof Date);
  assert.equal(typeof info.lastDurationMs, 'number');
  assert.equal(info.lastError, null);

  // The lock was released after the run: the other replica can run it now.
  assert.equal((await b.runner.runNow('manual')).outcome, 'success');
  assert.equal((await a.runner.list())[0]?.runsTotal, 2);

  await assert.rejects(a.runner.runNow('nope'), (err: unknown) => err instanceof UnknownJobError && err.code === 'JOB_NOT_FOUND');
});
