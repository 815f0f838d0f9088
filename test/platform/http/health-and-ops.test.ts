import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config.ts';
import { buildApp } from '../../../src/app.ts';
import { createPool } from '../../../src/platform/db/index.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { defineModule } from '../../../src/platform/module.ts';
import { buildTestApp } from '../../support/app.ts';
import { waitFor } from '../../support/wait.ts';

/** A module whose one job counts rows it inserts, so a run's counts can be checked against the table. */
const probeModule = defineModule({}, ({ pool }) => ({
  name: 'probe',
  jobs: [
    {
      name: 'probe-job',
      every: 3_600_000,
      singleRunner: true,
      async run() {
        await pool.query('create table if not exists probe_runs (id serial primary key)');
        await pool.query('insert into probe_runs default values');
        const { rows } = await pool.query<{ n: number }>('select count(*)::int as n from probe_runs');
        return { inserted: 1, total: rows[0]!.n };
      },
    },
  ],
}));

test('/health/live answers ok and /health/ready reports every dependency', async () => {
  const { app } = await buildTestApp();
  assert.deepEqual((await app.inject('/health/live')).json(), { status: 'ok' });
  const ready = await app.inject('/health/ready');
  assert.equal(ready.statusCode, 200);
  assert.deepEqual(ready.json(), {
    status: 'ready',
    // search: the messenger module's own check (PostgreSQL adapter without ELASTICSEARCH_URL).
    dependencies: { database: 'ok', eventBus: 'disabled', backplane: 'disabled', search: 'ok' },
  });
});

test('/health/ready is 503 with the database reported down when PostgreSQL is unreachable', async (t) => {
  const config = loadConfig({ LOG_LEVEL: 'silent', JOBS_ENABLED: 'false' });
  const pool = createPool('postgres://nobody:nothing@127.0.0.1:1/none', 2);
  const app = await buildApp(config, { pool, databaseUrl: 'postgres://nobody:nothing@127.0.0.1:1/none', log: createLogger('silent'), modules: [] });
  t.after(async () => {
    await app.close();
    await pool.end();
  });
  const res = await app.inject('/health/ready');
  assert.equal(res.statusCode, 503);
  assert.equal(res.json().status, 'unready');
  assert.equal(res.json().dependencies.database, 'down');
  // The same verdict as a metric, for the "dependency down" alert; a disabled one has no series.
  const text = (await app.inject('/metrics')).body;
  assert.match(text, /^health_dependency_up\{dependency="database",required="true"\} 0$/m);
  assert.doesNotMatch(text, /^health_dependency_up\{dependency="eventBus"/m);
});

test('/health/ready under a flood: concurrent calls share one run of the checks, and later calls reuse it for about a second', async () => {
  let probes = 0;
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  // A dependency whose check is a real statement, held open until every request has arrived.
  const gated = defineModule({}, ({ pool }) => ({
    name: 'gated',
    healthChecks: [
      {
        name: 'gated',
        required: true,
        async check() {
          probes += 1;
          await held;
          await pool.query('select 1');
          return 'ok' as const;
        },
      },
    ],
  }));
  const { app } = await buildTestApp({}, { modules: [gated] });
  const calls = Array.from({ length: 50 }, () => app.inject('/health/ready'));
  await new Promise((resolve) => setImmediate(resolve));
  release();
  const answers = await Promise.all(calls);
  assert.deepEqual([...new Set(answers.map((a) => a.statusCode))], [200]);
  assert.equal(answers[0]!.json().dependencies.gated, 'ok');
  assert.equal(probes, 1, '50 concurrent calls, one probe');
  // Within the next second: the same answer, no new probe (a scrape shares it too).
  assert.equal((await app.inject('/health/ready')).statusCode, 200);
  assert.match((await app.inject('/metrics')).body, /^health_dependency_up\{dependency="gated",required="true"\} 1$/m);
  assert.equal(probes, 1);
  // Not cached for good: once the answer is older than that, a call checks again.
  await waitFor('a fresh probe', async () => (await app.inject('/health/ready'), probes === 2), 5000);
});

test('health_dependency_up reports each enabled readiness dependency as 1 while it answers', async () => {
  const { app } = await buildTestApp();
  const text = (await app.inject('/metrics')).body;
  assert.match(text, /^health_dependency_up\{dependency="database",required="true"\} 1$/m);
  assert.match(text, /^health_dependency_up\{dependency="search",required="false"\} 1$/m);
  assert.doesNotMatch(text, /^health_dependency_up\{dependency="backplane"/m, 'disabled: no series');
});

test('/metrics exports process metrics and the job metrics after a run', async () => {
  const { app, token } = await buildTestApp({}, { modules: [probeModule] });
  await app.inject({ method: 'POST', url: '/api/ops/jobs/probe-job/run', headers: { authorization: `Bearer ${await token({ admin: true })}` } });
  const text = (await app.inject('/metrics')).body;
  assert.match(text, /^process_cpu_user_seconds_total /m);
  assert.match(text, /^job_runs_total\{job="probe-job",outcome="success"\} 1$/m);
  assert.match(text, /^job_last_success_timestamp_seconds\{job="probe-job"\} \d+/m);
});

test('/docs/json publishes the OpenAPI document of the routes', async () => {
  const { app } = await buildTestApp();
  const doc = (await app.inject('/docs/json')).json();
  assert.match(doc.openapi, /^3\./);
  for (const path of ['/health/ready', '/api/ops/jobs', '/api/ops/jobs/{name}/run', '/hubs/messenger/negotiate']) {
    assert.ok(doc.paths[path], `missing ${path}`);
  }
});

test('ops endpoints need an admin token', async () => {
  const { app, token } = await buildTestApp({}, { modules: [probeModule] });
  const none = await app.inject('/api/ops/jobs');
  assert.equal(none.statusCode, 401);
  assert.equal(none.json().code, 'AUTH_REQUIRED');
  const user = await app.inject({ url: '/api/ops/jobs', headers: { authorization: `Bearer ${await token()}` } });
  assert.equal(user.statusCode, 403);
  assert.equal(user.json().code, 'AUTH_FORBIDDEN');
  const forged = await app.inject({ url: '/api/ops/jobs', headers: { authorization: 'Bearer abc.def.ghi' } });
  assert.equal(forged.statusCode, 401);
  assert.equal(forged.json().code, 'AUTH_INVALID_TOKEN');
});

test('POST /api/ops/jobs/{name}/run runs the job once and GET /api/ops/jobs shows its last run', async () => {
  const { app, token } = await buildTestApp({}, { modules: [probeModule] });
  const auth = { authorization: `Bearer ${await token({ admin: true })}` };
  const run = await app.inject({ method: 'POST', url: '/api/ops/jobs/probe-job/run', headers: auth });
  assert.equal(run.statusCode, 200);
  assert.equal(run.json().outcome, 'success');
  assert.deepEqual(run.json().counts, { inserted: 1, total: 1 });

  const list = (await app.inject({ url: '/api/ops/jobs', headers: auth })).json();
  const probe = list.jobs.find((j: { name: string }) => j.name === 'probe-job');
  assert.equal(probe.lastOutcome, 'success');
  assert.deepEqual(probe.lastCounts, { inserted: 1, total: 1 });
  assert.equal(probe.singleRunner, true);
  assert.ok(probe.lastSuccessAt);

  const unknown = await app.inject({ method: 'POST', url: '/api/ops/jobs/no-such-job/run', headers: auth });
  assert.equal(unknown.statusCode, 404);
  assert.equal(unknown.json().code, 'JOB_NOT_FOUND');
});
