import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createDb, createPool } from '../../../src/platform/db/index.ts';
import { createJobRunner, defineJob, InvalidJobError } from '../../../src/platform/jobs/index.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { ManualClock } from '../../../src/platform/time.ts';
import { LEVEL, runsCounted, startReplica, type LogLine } from './support.ts';
import { waitFor } from '../../support/wait.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const tdb: TestDatabase = await createTestDatabase();

test('stop() during a row-by-row run stops between rows, and the rows committed so far stay committed', async (t) => {
  await tdb.pool.query('create table jobs_test_rows (id int primary key, processed_at timestamptz)');
  await tdb.pool.query('insert into jobs_test_rows (id) select g from generate_series(1, 200) g');
  const r = startReplica(t, tdb);
  let processed = 0;
  r.runner.register(
    defineJob({
      name: 'row-by-row',
      every: 3_600_000,
      singleRunner: true,
      async run({ signal, log }) {
        const { rows } = await tdb.pool.query<{ id: number }>('select id from jobs_test_rows where processed_at is null order by id');
        let done = 0;
        for (const { id } of rows) {
          if (signal.aborted) break;
          // One short transaction per row (autocommit), then some work outside it.
          await tdb.pool.query('update jobs_test_rows set processed_at = now() where id = $1', [id]);
          processed = ++done;
          await sleep(5);
        }
        log.info({ done }, 'rows processed');
        return { processed: done };
      },
    }),
  );

  const run = r.runner.runNow('row-by-row');
  await waitFor('a few rows to be processed', () => processed >= 3);
  await r.runner.stop();
  const result = await run;

  assert.equal(result.outcome, 'aborted');
  const committed = Number((await tdb.pool.query<{ n: string }>('select count(*) as n from jobs_test_rows where processed_at is not null')).rows[0]?.n);
  assert.ok(committed >= 3 && committed < 200, `stopped between rows (committed ${committed} of 200)`);
  assert.equal(result.counts.processed, committed, 'every row the run reported is committed, and no other');
  const [info] = await r.runner.list();
  assert.equal(info?.lastOutcome, 'aborted');
  assert.deepEqual(info?.lastCounts, { processed: committed });
  // The job's own log line carries the run's id.
  const jobLine = r.logs.find((l) => l.msg === 'rows processed');
  assert.equal(jobLine?.job, 'row-by-row');
  assert.equal(jobLine?.jobRunId, result.jobRunId);
});

test('the three job metrics are exported with job and outcome labels; ctx.now() and timestamps follow the injected clock', async (t) => {
  const clock = new ManualClock('2026-03-01T12:00:00Z');
  const registry = new Registry();
  const log = createLogger('silent');
  const pool = createPool(tdb.url, 2);
  const runner = createJobRunner({ db: createDb(pool), databaseUrl: tdb.url, log, registry, clock });
  t.after(async () => {
    await runner.stop();
    await pool.end();
  });
  let seenNow: Date | undefined;
  runner.register(defineJob({ name: 'metrics-ok', every: 60_000, singleRunner: true, run: async (ctx) => void (seenNow = ctx.now()) }));
  runner.register(defineJob({ name: 'metrics-fail', every: 60_000, run: async () => Promise.reject(new Error('no luck')) }));
  await runner.runNow('metrics-ok');
  await runner.runNow('metrics-fail');

  assert.deepEqual(seenNow, clock.now());
  const text = await registry.metrics();
  assert.match(text, /^job_runs_total\{job="metrics-ok",outcome="success"\} 1$/m);
  assert.match(text, /^job_runs_total\{job="metrics-ok",outcome="skipped"\} 0$/m, 'every outcome series exists from the start');
  assert.match(text, /^job_runs_total\{job="metrics-fail",outcome="failure"\} 1$/m);
  assert.match(text, /^job_run_duration_seconds_count\{job="metrics-ok"\} 1$/m);
  assert.match(text, /^job_run_duration_seconds_bucket\{le="\+Inf",job="metrics-fail"\} 1$/m);
  assert.match(text, /^job_last_success_timestamp_seconds\{job="metrics-ok"\} 1772366400$/m);
  assert.doesNotMatch(text, /job_last_success_timestamp_seconds\{job="metrics-fail"\}/);

  // A restarted replica's gauge starts from job_state, not from nothing.
  const restarted = startReplica(t, tdb);
  restarted.runner.register(defineJob({ name: 'metrics-ok', every: 3_600_000, run: async () => {} }));
  await restarted.runner.start();
  assert.match(await restarted.registry.metrics(), /^job_last_success_timestamp_seconds\{job="metrics-ok"\} 1772366400$/m);
});

test('a failing run is outcome failure, logged at error with its run id, and the next run still happens', async (t) => {
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  t.after(() => process.off('unhandledRejection', onUnhandled));
  const r = startReplica(t, tdb);
  let calls = 0;
  r.runner.register(
    defineJob({
      name: 'flaky',
      every: 100,
      singleRunner: true,
      async run() {
        calls++;
        if (calls === 1) throw new Error('provider exploded');
        return { sent: 1 };
      },
    }),
  );
  await r.runner.start();
  await waitFor('a success after the failure', async () => (await runsCounted(r.registry, 'flaky', 'success')) >= 1);
  await r.runner.stop();

  assert.equal(await runsCounted(r.registry, 'flaky', 'failure'), 1);
  const failed = r.logs.find((l) => l.msg === 'job run failed');
  assert.equal(failed?.level, LEVEL.error);
  assert.equal(failed?.job, 'flaky');
  assert.match(String(failed?.jobRunId), /^[0-9a-f-]{36}$/);
  assert.equal(failed?.err?.message, 'provider exploded');
  const [info] = await r.runner.list();
  assert.equal(info?.failuresTotal, 1);
  assert.ok((info?.runsTotal ?? 0) >= 2);
  assert.equal(info?.lastOutcome, 'success');
  assert.equal(info?.lastError, null);
  assert.deepEqual(unhandled, []);
});

test('a lock that cannot be taken (database unreachable) is a logged failure, not a crash', async (t) => {
  const logs: LogLine[] = [];
  const log = createLogger('debug', { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const runner = createJobRunner({
    db: tdb.db,
    databaseUrl: 'postgres://postgres:postgres@127.0.0.1:1/nowhere', // nothing listens on port 1
    log,
    registry: new Registry(),
  });
  t.after(() => runner.stop());
  let ran = false;
  runner.register(defineJob({ name: 'lockless', every: 60_000, singleRunner: true, run: async () => void (ran = true) }));

  const result = await runner.runNow('lockless');
  assert.equal(result.outcome, 'failure');
  assert.equal(ran, false, 'a single-runner job never runs without its lock');
  assert.ok(logs.some((l) => l.level === LEVEL.error && l.msg === 'job lock could not be acquired' && l.job === 'lockless'));
  const [info] = await runner.list();
  assert.equal(info?.lastOutcome, 'failure');
  assert.ok(info?.lastError);
});

test('a run that found nothing logs at debug; a run that did work logs its counts at info', async (t) => {
  const r = startReplica(t, tdb);
  r.runner.register(defineJob({ name: 'idle', every: 60_000, run: async () => ({ claimed: 0 }) }));
  r.runner.register(defineJob({ name: 'busy', every: 60_000, run: async () => ({ claimed: 3, sent: 3 }) }));
  await r.runner.runNow('idle');
  await r.runner.runNow('busy');
  const completed = (job: string) => r.logs.find((l) => l.msg === 'job completed' && l.job === job);
  assert.equal(completed('idle')?.level, LEVEL.debug);
  assert.equal(completed('busy')?.level, LEVEL.info);
  assert.deepEqual({ claimed: completed('busy')?.claimed, sent: completed('busy')?.sent }, { claimed: 3, sent: 3 });
  assert.equal(typeof completed('busy')?.durationMs, 'number');
});

test('a cron job runs on its UTC schedule and list() shows when it runs next', async (t) => {
  const r = startReplica(t, tdb);
  let runs = 0;
  r.runner.register(defineJob({ name: 'every-second', cron: '* * * * * *', run: async () => void runs++ }));
  await r.runner.start();
  const [info] = await r.runner.list();
  assert.equal(info?.schedule.description, 'cron * * * * * * (UTC)');
  assert.ok(info?.nextRunAt instanceof Date);
  await waitFor('a cron tick', () => runs >= 1, 5000);
});

test('a definition with a bad schedule or a taken name is refused at registration', (t) => {
  const r = startReplica(t, tdb);
  r.runner.register(defineJob({ name: 'once', every: 1000, run: async () => {} }));
  assert.throws(() => r.runner.register(defineJob({ name: 'once', every: 1000, run: async () => {} })), InvalidJobError);
  assert.throws(() => r.runner.register(defineJob({ name: 'bad-cron', cron: 'every day', run: async () => {} })), InvalidJobError);
  assert.equal(r.runner.has('once'), true);
  assert.equal(r.runner.has('bad-cron'), false);
});

test('stop() gives up on a run that ignores its signal after stopTimeoutMs and still closes its connections', async (t) => {
  const r = startReplica(t, tdb, { stopTimeoutMs: 200 });
  const never = Promise.withResolvers<void>();
  t.after(() => never.resolve());
  let entered = false;
  r.runner.register(
    defineJob({
      name: 'stubborn',
      every: 3_600_000,
      singleRunner: true,
      async run() {
        entered = true;
        await never.promise;
      },
    }),
  );
  void r.runner.runNow('stubborn');
  await waitFor('the run to start', () => entered);
  await r.runner.stop();
  assert.ok(r.logs.some((l) => l.level === LEVEL.warn && l.msg.startsWith('job runs ignored the stop signal')));
  assert.equal(r.runner.lockConnectionPid(), null);
});
