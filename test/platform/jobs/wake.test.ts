import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { defineJob, WAKE_APPLICATION_NAME, LOCK_APPLICATION_NAME } from '../../../src/platform/jobs/index.ts';
import { startReplica, waitFor, type Replica } from './support.ts';

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
