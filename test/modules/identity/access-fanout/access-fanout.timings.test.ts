import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../../support/db.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { accessFanOutJob } from '../../../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { claimNextTask, getTask, insertFanOutTask } from '../../../../src/modules/identity/access-fanout/fanout-sql.ts';
import { defaultSettings, identityContext, seedAssignments, seedRole, seedUsers } from '../support.ts';
import { metricValue } from '../../../support/metrics.ts';

/**
 * Seed 003's timings of a task, on the injected clock: StartedAt is set by the first take and kept
 * by every later one; identity_access_fanout_task_duration_ms is StartedAt → CompletedAt and
 * identity_access_fanout_task_lag_seconds is CreatedAt → CompletedAt, each observed once per task.
 */

const db = await createTestDatabase();
const T0 = new Date('2026-03-01T09:00:00Z');
const LEASE_MS = 60_000;
const settings = defaultSettings({ batchSize: 10, maxLeaseMs: LEASE_MS, inlineFanOutThreshold: 0 });
const at = (ms: number) => new Date(T0.getTime() + ms);

async function queuedRole(clock: ManualClock, users: number): Promise<string> {
  const roleId = await seedRole(db.pool);
  await seedAssignments(db.pool, roleId, await seedUsers(db.pool, users));
  const taskId = newId();
  const ctx = identityContext(db.pool, clock, settings);
  await ctx.db.transaction((tx) => insertFanOutTask(tx, { id: taskId, roleId, companyId: null, roleVersion: 2, now: clock.now() }));
  return taskId;
}

test('StartedAt is set on the first take and kept when the task is taken again after its lease lapsed', async () => {
  const clock = new ManualClock(T0);
  const taskId = await queuedRole(clock, 1);
  const { db: tdb } = identityContext(db.pool, clock, settings);
  assert.equal((await getTask(tdb, taskId))?.startedAt, null, 'a queued task has not started');

  const first = await claimNextTask(tdb, { now: at(30_000), leaseMs: LEASE_MS, maxAttempts: 5 });
  assert.deepEqual([first?.id, first?.attemptCount, first?.startedAt], [taskId, 1, at(30_000)]);

  // The worker died: its lease lapses and another worker takes the task as its next attempt.
  const again = await claimNextTask(tdb, { now: at(30_000 + LEASE_MS + 1), leaseMs: LEASE_MS, maxAttempts: 5 });
  assert.deepEqual([again?.id, again?.attemptCount, again?.startedAt], [taskId, 2, at(30_000)]);
  assert.deepEqual((await getTask(tdb, taskId))?.startedAt, at(30_000));
});

test('task duration and lag by value: taken 30 s after it was queued, 3 pages 10 s apart → duration 20,000 ms, lag 50 s', async () => {
  const clock = new ManualClock(T0);
  const ctx = identityContext(db.pool, clock, settings);
  const taskId = await queuedRole(clock, 25);
  clock.advance(30_000);
  const worker = accessFanOutJob({
    db: ctx.db,
    metrics: ctx.metrics,
    settings: settings.fanOut,
    // Each committed page takes 10 s on the clock.
    testHooks: { pageCommitted: async () => clock.advance(10_000) },
  });
  const counts = await worker.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log: createLogger('silent'), now: () => clock.now() });
  assert.deepEqual([counts.pages, counts.completed], [3, 1]);
  const task = (await getTask(ctx.db, taskId))!;
  assert.deepEqual([task.startedAt, task.completedAt], [at(30_000), at(50_000)]);

  const series = async (name: string) => [
    await metricValue(ctx.registry, name, {}, `${name}_count`),
    await metricValue(ctx.registry, name, {}, `${name}_sum`),
  ];
  assert.deepEqual(await series('identity_access_fanout_task_duration_ms'), [1, 20_000]);
  assert.deepEqual(await series('identity_access_fanout_task_lag_seconds'), [1, 50]);
});
