import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { accessFanOutJob } from '../../../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { getTask, insertFanOutTask } from '../../../../src/modules/identity/access-fanout/fanout-sql.ts';
import { metricValue } from '../../../support/metrics.ts';
import { createProxiedDatabase } from '../../../support/proxied-db.ts';
import { defaultSettings, identityContext, seedAssignments, seedRole, seedUsers } from '../support.ts';

/** Seed 003's "errors_total growing" alert must see a worker that cannot reach PostgreSQL at all, not only a failed page. */
test('a fan-out run that fails on the database raises identity_access_fanout_errors_total{kind="claim_failed"}; the task completes once it is back', async () => {
  const t = await createProxiedDatabase();
  const clock = new ManualClock('2026-03-01T09:00:00Z');
  const settings = defaultSettings({ batchSize: 10 });
  const ctx = identityContext(t.pool, clock, settings);
  const roleId = await seedRole(t.direct.pool);
  await seedAssignments(t.direct.pool, roleId, await seedUsers(t.direct.pool, 3));
  const taskId = newId();
  await t.direct.db.transaction((tx) => insertFanOutTask(tx, { id: taskId, roleId, companyId: null, roleVersion: 2, now: clock.now() }));
  const worker = accessFanOutJob({ db: ctx.db, metrics: ctx.metrics, settings: settings.fanOut });
  const run = () => worker.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log: createLogger('silent'), now: () => clock.now() });

  t.proxy.refuse();
  await assert.rejects(run());
  assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_errors_total', { kind: 'claim_failed' }), 1);

  t.proxy.restore();
  assert.equal((await run()).completed, 1);
  assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_errors_total'), 1, 'a healthy run adds no error');
  assert.equal((await getTask(t.direct.db, taskId))?.status, 'Completed');
});
