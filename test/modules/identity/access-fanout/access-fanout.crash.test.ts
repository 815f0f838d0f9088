import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestDatabase } from '../../../support/db.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { accessFanOutJob } from '../../../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { getTask, insertFanOutTask } from '../../../../src/modules/identity/access-fanout/fanout-sql.ts';
import { ACCESS_TOPIC, defaultSettings, identityContext, outboxEvents, seedAssignments, seedRole, seedUsers } from '../support.ts';

/**
 * Seed 003 "Идемпотентность/рестарт": a worker PROCESS is SIGKILLed mid-task; another resumes from
 * the Cursor. The consistency unit is the page: its events and its checkpoint commit together.
 */

const db = await createTestDatabase();
const clock = new ManualClock('2026-03-01T09:00:00Z');
const BATCH = 8;
const LEASE_MS = 60_000;
const USERS = 30; // 4 pages: 8 + 8 + 8 + 6
const settings = defaultSettings({ batchSize: BATCH, maxLeaseMs: LEASE_MS });
const ctx = identityContext(db.pool, clock, settings);
const CHILD = fileURLToPath(new URL('./fanout-child.ts', import.meta.url));

async function queuedRole() {
  const roleId = await seedRole(db.pool);
  const userIds = await seedUsers(db.pool, USERS);
  await seedAssignments(db.pool, roleId, userIds);
  const taskId = newId();
  clock.advance(1);
  await ctx.db.transaction((tx) => insertFanOutTask(tx, { id: taskId, roleId, companyId: null, roleVersion: 2, now: clock.now() }));
  return { taskId, userIds };
}

/** Runs the child until it reports the pause, then SIGKILLs it. Returns the cursor it reported. */
async function runChildAndKill(stopPage: number, stopPhase: 'committed' | 'written'): Promise<string> {
  const child = spawn(process.execPath, [CHILD], {
    env: {
      ...process.env,
      CHILD_DB_URL: db.url,
      CHILD_CLOCK: clock.now().toISOString(),
      CHILD_BATCH: String(BATCH),
      CHILD_LEASE_MS: String(LEASE_MS),
      CHILD_STOP_PAGE: String(stopPage),
      CHILD_STOP_PHASE: stopPhase,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  const cursor = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /PAUSED (\d+) (\S+)/.exec(out);
      if (m) resolve(m[2]!);
      if (out.includes('DONE')) reject(new Error('the child finished without pausing'));
    });
    child.on('exit', () => reject(new Error(`child exited before pausing: ${out}`)));
    setTimeout(() => reject(new Error('child did not pause in time')), 30_000).unref();
  });
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL');
  return cursor;
}

/** After the crash: once the lease has expired, a fresh worker resumes (polls while the killed backend's locks go away). */
async function resume(taskId: string) {
  clock.advance(LEASE_MS + 1);
  const worker = accessFanOutJob({ db: ctx.db, metrics: ctx.metrics, settings: settings.fanOut });
  const deadline = Date.now() + 15_000;
  for (;;) {
    await worker.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log: createLogger('silent'), now: () => clock.now() });
    const task = (await getTask(ctx.db, taskId))!;
    if (task.status === 'Completed') return task;
    if (Date.now() > deadline) throw new Error(`task still ${task.status} after resuming`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const eventsPerUser = async (userIds: readonly string[]) => {
  const wanted = new Set(userIds);
  const counts = new Map<string, number>();
  for (const e of await outboxEvents(db.pool, ACCESS_TOPIC)) if (wanted.has(e.key)) counts.set(e.key, (counts.get(e.key) ?? 0) + 1);
  return counts;
};

describe('AccessFanOutJob restart (seed 003 "Idempotency/restart")', () => {
  test('a worker process SIGKILLed right after a page commits: the next worker resumes from Cursor, at most one page repeats, no user is missed', async () => {
    const { taskId, userIds } = await queuedRole();
    const cursor = await runChildAndKill(2, 'committed');
    const atCrash = (await getTask(ctx.db, taskId))!;
    assert.deepEqual([atCrash.status, atCrash.processedCount, atCrash.cursor, atCrash.attemptCount], ['InProgress', 2 * BATCH, cursor, 1]);
    assert.equal(cursor, userIds[2 * BATCH - 1]);
    const before = await eventsPerUser(userIds);
    assert.equal([...before.values()].reduce((a, b) => a + b, 0), 2 * BATCH, 'the committed pages and only they are in the outbox');

    const done = await resume(taskId);
    assert.deepEqual([done.processedCount, done.attemptCount], [USERS, 2]);
    const after = await eventsPerUser(userIds);
    assert.equal(after.size, USERS, 'no user missed');
    const repeated = [...after.values()].reduce((a, b) => a + b, 0) - USERS;
    assert.ok(repeated <= BATCH, `at most one page repeated (${repeated} extra events)`);
    assert.equal(repeated, 0, 'the committed checkpoint keeps even that page from repeating');
  });

  test('a worker process SIGKILLed inside a page transaction: that page rolls back whole (no events, no checkpoint) and is done once by the next worker', async () => {
    const { taskId, userIds } = await queuedRole();
    await runChildAndKill(3, 'written');
    const atCrash = (await getTask(ctx.db, taskId))!;
    assert.deepEqual([atCrash.processedCount, atCrash.cursor], [2 * BATCH, userIds[2 * BATCH - 1]]);
    assert.equal([...(await eventsPerUser(userIds)).values()].reduce((a, b) => a + b, 0), 2 * BATCH);
    const done = await resume(taskId);
    assert.deepEqual([done.processedCount, done.cursor], [USERS, userIds.at(-1)]);
    const after = await eventsPerUser(userIds);
    assert.equal(after.size, USERS);
    assert.ok([...after.values()].every((n) => n === 1), 'the killed page left nothing behind');
  });
});
