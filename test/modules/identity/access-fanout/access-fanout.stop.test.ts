import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../../support/db.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { accessFanOutJob, type AccessFanOutWorkerOptions } from '../../../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { getTask, insertFanOutTask } from '../../../../src/modules/identity/access-fanout/fanout-sql.ts';
import type { UserAccessChangedKafkaEvent } from '../../../../src/contracts/identity-events.ts';
import { ACCESS_TOPIC, defaultSettings, identityContext, outboxEvents, seedAssignments, seedRole, seedUsers } from '../support.ts';

/**
 * Graceful stops (deploys) during a big fan-out: a stop between pages hands the task back without
 * using up an attempt, so any number of deploys never turns a healthy task Failed, and every user
 * still gets exactly one event.
 */

const db = await createTestDatabase();
const pool = db.pool;
const clock = new ManualClock('2026-03-01T09:00:00Z');
const BATCH = 10;
const LEASE_MS = 60_000;
const MAX_ATTEMPTS = 3;
const settings = defaultSettings({ batchSize: BATCH, maxLeaseMs: LEASE_MS, maxAttempts: MAX_ATTEMPTS, inlineFanOutThreshold: 0 });
const ctx = identityContext(pool, clock, settings);
const silent = createLogger('silent');

const worker = (hooks?: AccessFanOutWorkerOptions['testHooks']) =>
  accessFanOutJob({ db: ctx.db, metrics: ctx.metrics, settings: settings.fanOut, testHooks: hooks });
const runCtx = (signal = new AbortController().signal) => ({ jobRunId: newId(), signal, log: silent, now: () => clock.now() });

async function queuedRole(users: number): Promise<{ taskId: string; userIds: string[] }> {
  const roleId = await seedRole(pool);
  const userIds = await seedUsers(pool, users);
  await seedAssignments(pool, roleId, userIds);
  const taskId = newId();
  clock.advance(1);
  await ctx.db.transaction((tx) => insertFanOutTask(tx, { id: taskId, roleId, companyId: null, roleVersion: 2, now: clock.now() }));
  return { taskId, userIds };
}

/** A run that is stopped (SIGTERM) right after its first page commits. */
async function runStoppedAfterOnePage() {
  const stop = new AbortController();
  return worker({ pageCommitted: async () => stop.abort() }).runOnce(runCtx(stop.signal));
}

async function eventsPerUser(userIds: readonly string[]): Promise<Map<string, number>> {
  const wanted = new Set(userIds);
  const counts = new Map<string, number>();
  for (const e of await outboxEvents<UserAccessChangedKafkaEvent>(pool, ACCESS_TOPIC)) {
    if (wanted.has(e.key)) counts.set(e.key, (counts.get(e.key) ?? 0) + 1);
  }
  return counts;
}

const state = async (taskId: string) => {
  const t = (await getTask(ctx.db, taskId))!;
  return { status: t.status, attempt: t.attemptCount, processed: t.processedCount };
};

describe('AccessFanOutJob graceful stops', () => {
  test('more graceful stops than MaxAttempts in the middle of a task: still Pending under attempt 1 after each, then completed with one event per user', async () => {
    const stops = MAX_ATTEMPTS + 2;
    const { taskId, userIds } = await queuedRole(BATCH * stops + 5);

    for (let i = 1; i <= stops; i++) {
      const counts = await runStoppedAfterOnePage();
      assert.deepEqual([counts.tasks, counts.failed, counts.users], [1, 0, BATCH], `stop ${i}: one page done`);
      assert.deepEqual(await state(taskId), { status: 'Pending', attempt: 1, processed: BATCH * i }, `after stop ${i}`);
    }

    const last = await worker().runOnce(runCtx());
    assert.deepEqual([last.completed, last.failed], [1, 0]);
    assert.deepEqual(await state(taskId), { status: 'Completed', attempt: 1, processed: userIds.length });
    const per = await eventsPerUser(userIds);
    assert.equal(per.size, userIds.length, 'every user got the event');
    assert.ok([...per.values()].every((n) => n === 1), 'exactly once each');
  });

  test('a task on its last allowed attempt, stopped gracefully, resumes instead of turning Failed at the next claim', async () => {
    const { taskId, userIds } = await queuedRole(BATCH * 2 + 3);
    // Two earlier leases expired (workers died): the next claim is the last allowed attempt.
    await pool.query(`update identity.access_fanout_tasks set status = 'InProgress', attempt_count = $2, lease_expires_at = $3 where id = $1`, [
      taskId,
      MAX_ATTEMPTS - 1,
      new Date(clock.now().getTime() - 1),
    ]);

    await runStoppedAfterOnePage();
    assert.deepEqual(await state(taskId), { status: 'Pending', attempt: MAX_ATTEMPTS, processed: BATCH });
    await runStoppedAfterOnePage();
    assert.deepEqual(await state(taskId), { status: 'Pending', attempt: MAX_ATTEMPTS, processed: BATCH * 2 });

    const last = await worker().runOnce(runCtx());
    assert.deepEqual([last.completed, last.failed], [1, 0]);
    assert.deepEqual(await state(taskId), { status: 'Completed', attempt: MAX_ATTEMPTS, processed: userIds.length });
    assert.equal((await eventsPerUser(userIds)).size, userIds.length);
  });

  test('a stale holder of an older attempt stays fenced out after a later holder stops gracefully and another resumes', async () => {
    const { taskId, userIds } = await queuedRole(BATCH * 3 + 1);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let stalled!: () => void;
    const stalledAfterFirstPage = new Promise<void>((r) => (stalled = r));
    let pages = 0;
    const staleRun = worker({
      pageCommitted: async () => {
        if (++pages === 1) {
          stalled();
          await gate; // attempt 1 stalls past its lease
        }
      },
    }).runOnce(runCtx());
    await stalledAfterFirstPage;

    clock.advance(LEASE_MS + 1);
    await runStoppedAfterOnePage(); // attempt 2 takes over, does a page, is stopped gracefully
    assert.deepEqual(await state(taskId), { status: 'Pending', attempt: 2, processed: BATCH * 2 });
    let resumedPages = 0;
    let resumedPage!: () => void;
    const resumedOnePage = new Promise<void>((r) => (resumedPage = r));
    let finish!: () => void;
    const finishGate = new Promise<void>((r) => (finish = r));
    const resumed = worker({
      pageCommitted: async () => {
        if (++resumedPages === 1) {
          resumedPage();
          await finishGate; // holds attempt 2 (resumed) while the stale worker wakes up
        }
      },
    }).runOnce(runCtx());
    await resumedOnePage;

    release();
    const staleCounts = await staleRun;
    assert.equal(staleCounts.leasesLost, 1, 'attempt 1 wrote nothing after the takeover');
    finish();
    assert.equal((await resumed).completed, 1);
    assert.deepEqual(await state(taskId), { status: 'Completed', attempt: 2, processed: userIds.length });
    const per = await eventsPerUser(userIds);
    assert.equal(per.size, userIds.length);
    assert.ok([...per.values()].every((n) => n === 1));
  });
});
