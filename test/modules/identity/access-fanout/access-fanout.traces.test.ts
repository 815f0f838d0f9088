import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestTracing } from '../../../support/tracing.ts';
import { createTestDatabase } from '../../../support/db.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { accessFanOutJob } from '../../../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { insertFanOutTask } from '../../../../src/modules/identity/access-fanout/fanout-sql.ts';
import { defaultSettings, identityContext, seedAssignments, seedRole, seedUsers } from '../support.ts';

/** Seed 003 "Traces": a span per task (taskId, roleId; batchSize, processedCount) with a child per page; the page's events carry its trace. */

const tracing = await startTestTracing();
const db = await createTestDatabase();
const clock = new ManualClock('2026-03-01T09:00:00Z');
const settings = defaultSettings({ batchSize: 10, maxLeaseMs: 60_000, maxAttempts: 3, inlineFanOutThreshold: 0 });
const ctx = identityContext(db.pool, clock, settings);

test('a task span with taskId, roleId, batchSize and processedCount; a page span per page; the outbox rows hold the page span', async () => {
  const roleId = await seedRole(db.pool);
  await seedAssignments(db.pool, roleId, await seedUsers(db.pool, 25));
  const taskId = newId();
  await ctx.db.transaction((tx) => insertFanOutTask(tx, { id: taskId, roleId, companyId: null, roleVersion: 2, now: clock.now() }));

  const worker = accessFanOutJob({ db: ctx.db, metrics: ctx.metrics, settings: settings.fanOut });
  const counts = await worker.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log: createLogger('silent'), now: () => clock.now() });
  assert.equal(counts.users, 25);

  const task = tracing.one('task');
  assert.deepEqual(
    { taskId: task.attributes.taskId, roleId: task.attributes.roleId, batchSize: task.attributes.batchSize, processedCount: task.attributes.processedCount },
    { taskId, roleId, batchSize: 10, processedCount: 25 },
  );
  assert.equal(task.parentSpanContext?.spanId, tracing.one('identity-access-fanout batch', (s) => s.attributes.claimed === 1).spanContext().spanId);
  const pages = tracing.childrenOf(task).filter((s) => s.name === 'page');
  assert.deepEqual(pages.map((p) => p.attributes.rows), [10, 10, 5]);

  const { rows } = await db.pool.query<{ traceparent: string }>(`select distinct traceparent from platform.outbox where event_type = 'UserAccessChangedKafkaEvent'`);
  assert.deepEqual(
    new Set(rows.map((r) => r.traceparent.split('-')[2])),
    new Set(pages.map((p) => p.spanContext().spanId)),
    'each page enqueues under its own span',
  );
});
