import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { defineJob, WAKE_APPLICATION_NAME, LOCK_APPLICATION_NAME } from '../../../src/platform/jobs/index.ts';
import { startReplica, within, type Replica } from './support.ts';
import { waitFor } from '../../support/wait.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const tdb: TestDatabase = await createTestDatabase();

const HOUR = 3_600_000; // the timer never fires during a test: only a notification can start a run

function wokenJob(r: Replica, name: string, channel: string, runMs = 20): { runs: () => number } {
  let runs = 0;
  r.runner.register(
    defineJob({
      name,
      every: HOUR,
      singleRunner: true,
      wakeChannel: channel,
      async run() {
        runs++;
        await sleep(runMs);
        return { runs: 1 };
      },
    }),
  );
  return { runs: () => runs };
}

const isIdle = async (r: Replica, name: string) => !(await r.runner.list()).find((j) => j.name === name)?.running;

test('a NOTIFY on the wake channel starts a run at once, and a burst of NOTIFYs costs a handful of runs', async (t) => {
  const r = startReplica(t, tdb);
  const job = wokenJob(r, 'woken', 'jobs_test_wake');
  await r.runner.start();
  // Notifications sent before LISTEN are lost, so listening begins with one catch-up run.
  await waitFor('the catch-up run', async () => job.runs() === 1 && (await isIdle(r, 'woken')));

  await tdb.pool.query(`select pg_notify('jobs_test_wake', '')`);
  await waitFor('a run started by the notification', () => job.runs() === 2);
  await waitFor('that run to finish', () => isIdle(r, 'woken'));

  const observer = new pg.Client({ connectionString: tdb.url });
  await observer.connect();
  t.after(() => observer.end());
  let delivered = 0;
  observer.on('notification', () => delivered++);
  await observer.query('listen jobs_test_wake');
  // Distinct payloads: PostgreSQL folds identical notifications of one transaction into one.
  await tdb.pool.query(`select pg_notify('jobs_test_wake', g::text) from generate_series(1, 1000) g`);
  await waitFor('all 1000 notifications to be delivered', () => delivered === 1000);
  await waitFor('the burst to cause a run', () => job.runs() > 2);
  await waitFor('the burst runs to finish', () => isIdle(r, 'woken'));
  await sleep(200); // room for runs a busy loop would still start
  const burstRuns = job.runs() - 2;
  assert.ok(burstRuns >= 1 && burstRuns <= 5, `1000 notifications caused ${burstRuns} runs`);
});

test('after its LISTEN connection is killed the runner reconnects, catches up, and wakes on NOTIFY again', async (t) => {
  const r = startReplica(t, tdb);
  const job = wokenJob(r, 'rewoken', 'jobs_test_rewake', 1);
  await r.runner.start();
  await waitFor('the catch-up run', async () => job.runs() === 1 && (await isIdle(r, 'rewoken')));

  const { rows } = await tdb.pool.query<{ pid: number }>(
    `select pid from pg_stat_activity where application_name = $1 and datname = current_database()`,
    [WAKE_APPLICATION_NAME],
  );
  assert.equal(rows.length, 1, 'one LISTEN connection per runner');
  await tdb.pool.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
  await waitFor('a catch-up run after reconnecting', () => job.runs() === 2);
  assert.ok(r.logs.some((l) => l.msg.startsWith('job wake listener reconnected')));
  await waitFor('the catch-up run to finish', () => isIdle(r, 'rewoken'));

  await tdb.pool.query(`select pg_notify('jobs_test_rewake', '')`);
  await waitFor('a run started by a notification on the new connection', () => job.runs() === 3);
});

test('stop() closes the runner\'s LISTEN and lock connections', async (t) => {
  const r = startReplica(t, tdb);
  const job = wokenJob(r, 'closing', 'jobs_test_close', 1);
  await r.runner.start();
  await waitFor('the catch-up run, which opens the lock connection', async () => job.runs() === 1 && (await isIdle(r, 'closing')));
  const count = async () =>
    Number(
      (
        await tdb.pool.query<{ n: string }>(
          `select count(*) as n from pg_stat_activity where application_name = any($1) and datname = current_database()`,
          [[WAKE_APPLICATION_NAME, LOCK_APPLICATION_NAME]],
        )
      ).rows[0]?.n,
    );
  assert.equal(await count(), 2);
  await r.runner.stop();
  await waitFor('both connections to close', async () => (await count()) === 0);
});

test('a wake during a run is handed to the run through ctx.woken(), once, and then starts no rerun', async (t) => {
  const r = startReplica(t, tdb);
  let runs = 0;
  let notified = false;
  const seen: boolean[] = [];
  r.runner.register(
    defineJob({
      name: 'takes-wakes',
      every: HOUR,
      singleRunner: true,
      wakeChannel: 'jobs_test_take_wake',
      async run(ctx) {
        runs++;
        if (runs === 1) return; // the catch-up run when listening begins
        seen.push(ctx.woken!()); // nothing arrived yet
        await tdb.pool.query(`select pg_notify('jobs_test_take_wake', 'during')`);
        notified = true;
        await waitFor('the wake to reach the run', () => {
          const w = ctx.woken!();
          if (w) seen.push(w);
          return w;
        });
        seen.push(ctx.woken!()); // taken: not again
      },
    }),
  );
  await r.runner.start();
  await waitFor('the catch-up run', async () => runs === 1 && (await isIdle(r, 'takes-wakes')));

  await tdb.pool.query(`select pg_notify('jobs_test_take_wake', 'start')`);
  await waitFor('the woken run to finish', async () => notified && (await isIdle(r, 'takes-wakes')));
  await sleep(200); // room for a rerun that must not come
  assert.deepEqual(seen, [false, true, false]);
  assert.equal(runs, 2, 'the wake the run took caused no rerun');
});

test('a run waits for the next wake with ctx.waitForWake(): a NOTIFY or connectWake ends the wait at once; the timeout gives up', async (t) => {
  const r = startReplica(t, tdb);
  let wakeHere: () => void = () => {};
  let runs = 0;
  const waits: { woke: boolean; ms: number }[] = [];
  let finished = false;
  r.runner.register(
    defineJob({
      name: 'waits-for-wakes',
      every: HOUR,
      singleRunner: true,
      wakeChannel: 'jobs_test_wait_wake',
      connectWake: (wake) => {
        wakeHere = wake;
      },
      async run(ctx) {
        runs++;
        if (runs === 1) return; // the catch-up run when listening begins
        for (let i = 0; i < 3; i++) {
          const t0 = performance.now();
          waits.push({ woke: await ctx.waitForWake!(i < 2 ? 10_000 : 100), ms: performance.now() - t0 });
        }
        finished = true;
      },
    }),
  );
  await r.runner.start();
  await waitFor('the catch-up run', async () => runs === 1 && (await isIdle(r, 'waits-for-wakes')));

  wakeHere(); // starts a run, in this process
  await waitFor('the run to wait', () => runs === 2);
  await tdb.pool.query(`select pg_notify('jobs_test_wait_wake', 'one')`);
  await waitFor('the first wait to end', () => waits.length === 1);
  wakeHere();
  await waitFor('the second wait to end', () => waits.length === 2);
  await waitFor('the third wait to give up', () => finished);
  assert.deepEqual(
    waits.map((w) => w.woke),
    [true, true, false],
  );
  assert.ok(waits[0]!.ms < 5000 && waits[1]!.ms < 5000, 'woken long before the timeout');
  await waitFor('the run to finish', () => isIdle(r, 'waits-for-wakes'));
  await sleep(200); // room for a rerun that must not come: every wake was taken by the run
  assert.equal(runs, 2);
});

test('a stop ends a wait for a wake at once; a run started by hand gets no waitForWake', async (t) => {
  const r = startReplica(t, tdb);
  let waiting = false;
  let waited: boolean | undefined;
  let manualHasWait: boolean | undefined;
  r.runner.register(
    defineJob({
      name: 'stopped-while-waiting',
      every: HOUR,
      singleRunner: true,
      wakeChannel: 'jobs_test_stop_wait',
      async run(ctx) {
        if (waiting || !ctx.waitForWake) return;
        waiting = true;
        waited = await ctx.waitForWake(60_000);
      },
    }),
  );
  r.runner.register(
    defineJob({
      name: 'by-hand',
      every: HOUR,
      async run(ctx) {
        manualHasWait = ctx.waitForWake !== undefined;
      },
    }),
  );
  await r.runner.runNow('by-hand');
  assert.equal(manualHasWait, false);
  await r.runner.start(); // the catch-up run starts waiting
  await waitFor('the run to be waiting', () => waiting);
  await within('stop() while a run waits for a wake', r.runner.stop(), 5000);
  assert.equal(waited, false);
});

test("a NOTIFY carrying the runner's own payload (connectWake's) starts no run of that job in that runner; other jobs and other payloads wake", async (t) => {
  const r = startReplica(t, tdb);
  let runs = 0;
  let ownPayload = '';
  r.runner.register(
    defineJob({
      name: 'woken-once',
      every: HOUR,
      singleRunner: true,
      wakeChannel: 'jobs_test_own_wake',
      connectWake: (_wake, payload) => {
        ownPayload = payload;
      },
      async run() {
        runs++;
        await sleep(20);
      },
    }),
  );
  // A job on the same channel whose owner does not wake it in process.
  let plainRuns = 0;
  r.runner.register(defineJob({ name: 'woken-plain', every: HOUR, singleRunner: true, wakeChannel: 'jobs_test_own_wake', run: async () => void plainRuns++ }));
  await r.runner.start();
  await waitFor('the catch-up runs', async () => runs === 1 && plainRuns === 1 && (await isIdle(r, 'woken-once')) && (await isIdle(r, 'woken-plain')));
  assert.notEqual(ownPayload, '');

  // The owner woke the job in this process already; then another replica's commit.
  await tdb.pool.query(`select pg_notify('jobs_test_own_wake', $1)`, [ownPayload]);
  await waitFor('the job without connectWake to wake on it', () => plainRuns === 2);
  await tdb.pool.query(`select pg_notify('jobs_test_own_wake', 'another replica')`);
  await waitFor('the run started by the other payload', () => runs === 2);
  await waitFor('that run to finish', () => isIdle(r, 'woken-once'));
  await sleep(200); // room for the rerun the first notification would have asked for
  assert.equal(runs, 2);

  // Another runner (another replica) wakes on this one's payload.
  const other = startReplica(t, tdb);
  let otherRuns = 0;
  other.runner.register(
    defineJob({ name: 'woken-elsewhere', every: HOUR, singleRunner: true, wakeChannel: 'jobs_test_own_wake', run: async () => void otherRuns++ }),
  );
  await other.runner.start();
  await waitFor('its catch-up run', async () => otherRuns === 1 && (await isIdle(other, 'woken-elsewhere')));
  await tdb.pool.query(`select pg_notify('jobs_test_own_wake', $1)`, [ownPayload]);
  await waitFor("the other runner's run on the first one's payload", () => otherRuns === 2);
});
