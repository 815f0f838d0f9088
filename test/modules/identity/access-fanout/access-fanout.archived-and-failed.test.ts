import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../../support/db.ts';
import { logCapture } from '../../../support/logs.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { accessFanOutJob, type AccessFanOutWorkerOptions } from '../../../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { getTask, insertFanOutTask } from '../../../../src/modules/identity/access-fanout/fanout-sql.ts';
import { archiveRole, setRolePermissions } from '../../../../src/modules/identity/roles/role-operations.ts';
import type { UserAccessChangedKafkaEvent } from '../../../../src/contracts/identity-events.ts';
import { ACCESS_TOPIC, defaultSettings, identityContext, outboxEvents, seedAssignments, seedRole, seedUsers } from '../support.ts';

/**
 * AccessFanOutJob (seed 003) around a role archived after its task was queued, and the seed's
 * "task failed" log lines (roleId, attempt, exception) for each way a task's pass fails.
 */

const db = await createTestDatabase();
const pool = db.pool;
const clock = new ManualClock('2026-03-01T09:00:00Z');
const settings = defaultSettings({ batchSize: 10, maxLeaseMs: 60_000, maxAttempts: 2, inlineFanOutThreshold: 0 });
const ctx = identityContext(pool, clock, settings);

const worker = (hooks?: AccessFanOutWorkerOptions['testHooks']) => accessFanOutJob({ db: ctx.db, metrics: ctx.metrics, settings: settings.fanOut, testHooks: hooks });
const runCtx = (log = logCapture('info').log) => ({ jobRunId: newId(), signal: new AbortController().signal, log, now: () => clock.now() });

async function roleWithUsers(users: number) {
  const roleId = await seedRole(pool);
  const userIds = await seedUsers(pool, users);
  await seedAssignments(pool, roleId, userIds);
  return { roleId, userIds };
}

async function queueTask(roleId: string): Promise<string> {
  const id = newId();
  clock.advance(1);
  await ctx.db.transaction((tx) => insertFanOutTask(tx, { id, roleId, companyId: null, roleVersion: 2, now: clock.now() }));
  return id;
}

const eventsOf = async (userIds: readonly string[]) =>
  (await outboxEvents<UserAccessChangedKafkaEvent>(pool, ACCESS_TOPIC)).filter((e) => userIds.includes(e.key));

const errorLines = (logs: ReturnType<typeof logCapture>) => logs.lines().filter((l) => l.level === 50);

describe('AccessFanOutJob: a role archived between queueing and processing', () => {
  test('the queued task completes without events: the archive already revoked and announced every assignment (INV-R5)', async () => {
    const { roleId, userIds } = await roleWithUsers(3);
    const { fanOut } = await setRolePermissions(ctx, roleId, ['deals.read', 'deals.write']);
    assert.equal(fanOut.mode, 'queued');
    const archived = await archiveRole(ctx, roleId);
    assert.equal(archived.revokedUsers, 3);

    const counts = await worker().runOnce(runCtx());
    assert.deepEqual([counts.completed, counts.users], [1, 0]);
    const task = (await getTask(ctx.db, fanOut.taskId!))!;
    assert.deepEqual([task.status, task.processedCount], ['Completed', 0]);
    // Each user's only event is the archive's: no RolePermissionsChanged snapshot follows it with a stale grant.
    const events = await eventsOf(userIds);
    assert.deepEqual(events.map((e) => [e.key, e.payload.ChangeReason]).sort(), userIds.map((u) => [u, 'RoleArchived']).sort());
    for (const e of events) assert.ok(e.payload.ActiveAssignments.every((a) => a.RoleId !== roleId), 'the archived role grants nothing');
  });
});

describe("AccessFanOutJob: the seed's 'task failed' lines (error level, roleId, attempt, exception)", () => {
  test('a failed page: retried from Cursor after the retry backoff, with the time; the kernel adds no line of its own', async () => {
    const { roleId } = await roleWithUsers(2);
    const taskId = await queueTask(roleId);
    const logs = logCapture('info');
    const failing = { pageWritten: async () => Promise.reject(new Error('simulated storage failure')) };
    assert.equal((await worker(failing).runOnce(runCtx(logs.log))).pageErrors, 1);
    const task = (await getTask(ctx.db, taskId))!;
    const lines = errorLines(logs);
    assert.deepEqual(
      lines.map((l) => [l.msg, l.taskId, l.roleId, l.attempt, l.retryAt]),
      [['task failed; retried from Cursor after the retry backoff', taskId, roleId, 1, task.leaseExpiresAt!.toISOString()]],
    );
    assert.match(String(lines[0]!.exception), /simulated storage failure/);
  });

  test('a failed page whose failure cannot be recorded: retried from Cursor when its lease expires, no retry time', async () => {
    const { roleId } = await roleWithUsers(2);
    const taskId = await queueTask(roleId);
    await pool.query(`create function public.refuse_task_error() returns trigger language plpgsql as $$
                      begin raise exception 'simulated outage while recording'; end $$`);
    await pool.query(`create trigger refuse_task_error before update on identity.access_fanout_tasks for each row
                      when (new.id = '${taskId}' and new.last_error is not null) execute function public.refuse_task_error()`);
    try {
      const logs = logCapture('info');
      const failing = { pageWritten: async () => Promise.reject(new Error('simulated storage failure')) };
      await worker(failing).runOnce(runCtx(logs.log));
      const lines = errorLines(logs);
      assert.deepEqual(lines.map((l) => [l.msg, l.taskId, l.roleId, l.attempt, 'retryAt' in l]), [
        ['task failed; retried from Cursor when its lease expires', taskId, roleId, 1, false],
      ]);
      assert.equal((await getTask(ctx.db, taskId))!.lastError, null, 'nothing was recorded');
    } finally {
      await pool.query('drop trigger refuse_task_error on identity.access_fanout_tasks');
      await pool.query('drop function public.refuse_task_error()');
    }
  });

  test('the last allowed attempt fails, and a claim finds a task out of attempts: moved to Failed, one line each with MaxAttempts', async () => {
    // The earlier tests' tasks, still waiting for their retries, are not this test's.
    await pool.query(`update identity.access_fanout_tasks set status = 'Completed' where status in ('Pending', 'InProgress')`);
    const { roleId } = await roleWithUsers(2);
    const taskId = await queueTask(roleId);
    const failing = { pageWritten: async () => Promise.reject(new Error('simulated storage failure')) };
    await worker(failing).runOnce(runCtx());
    clock.advance(settings.fanOut.maxLeaseMs + 1);
    const logs = logCapture('info');
    await worker(failing).runOnce(runCtx(logs.log));
    assert.equal((await getTask(ctx.db, taskId))!.status, 'Failed');
    const [line, ...more] = errorLines(logs);
    assert.deepEqual([line?.msg, line?.taskId, line?.roleId, line?.attempt, line?.maxAttempts, more.length], [
      'task failed: max attempts reached, moved to Failed (replay through the runbook)',
      taskId,
      roleId,
      2,
      2,
      0,
    ]);
    assert.match(String(line!.exception), /simulated storage failure/);

    // A worker died holding the last allowed lease: the next claim turns the task Failed and says so.
    const other = await roleWithUsers(1);
    const abandoned = await queueTask(other.roleId);
    await pool.query(`update identity.access_fanout_tasks set status = 'InProgress', attempt_count = 2, lease_expires_at = $2, last_error = null where id = $1`, [
      abandoned,
      new Date(clock.now().getTime() - 1),
    ]);
    const atClaim = logCapture('info');
    await worker().runOnce(runCtx(atClaim.log));
    const claimLines = errorLines(atClaim);
    assert.deepEqual(claimLines.map((l) => [l.msg, l.taskId, l.roleId, l.attempt, l.maxAttempts]), [
      ['task failed: max attempts reached, moved to Failed (replay through the runbook)', abandoned, other.roleId, 2, 2],
    ]);
    assert.match(String(claimLines[0]!.exception), /lease expired/);
  });
});
