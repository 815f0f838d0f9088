import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createTestDatabase } from '../../../support/db.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { ACCESS_FANOUT_JOB, accessFanOutJob, type AccessFanOutWorkerOptions } from '../../../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { insertFanOutTask, getTask } from '../../../../src/modules/identity/access-fanout/fanout-sql.ts';
import { replayFailedTasks } from '../../../../src/modules/identity/access-fanout/failed-tasks-sql.ts';
import { setRolePermissions } from '../../../../src/modules/identity/roles/role-operations.ts';
import type { UserAccessChangedKafkaEvent } from '../../../../src/contracts/identity-events.ts';
import type { Logger } from '../../../../src/platform/observability/logger.ts';
import { ACCESS_TOPIC, defaultSettings, identityContext, outboxEvents, seedAssignments, seedRole, seedUsers } from '../support.ts';
import { metricValue } from '../../../support/metrics.ts';
import { startReplica } from '../../../platform/jobs/support.ts';

const db = await createTestDatabase();
const pool = db.pool;
const clock = new ManualClock('2026-03-01T09:00:00Z');
const BATCH = 10;
const LEASE_MS = 60_000;
const settings = defaultSettings({ batchSize: BATCH, maxLeaseMs: LEASE_MS, maxAttempts: 3, inlineFanOutThreshold: 0 });
const ctx = identityContext(pool, clock, settings);
const silent = createLogger('silent');

function worker(hooks?: AccessFanOutWorkerOptions['testHooks'], over: Partial<typeof settings.fanOut> = {}) {
  return accessFanOutJob({ db: ctx.db, metrics: ctx.metrics, settings: { ...settings.fanOut, ...over }, testHooks: hooks });
}

const runCtx = (signal = new AbortController().signal, log: Logger = silent) => ({ jobRunId: newId(), signal, log, now: () => clock.now() });

async function queueTask(roleId: string, roleVersion = 2): Promise<string> {
  const id = newId();
  clock.advance(1); // CreatedAt order = queue order
  await ctx.db.transaction((tx) => insertFanOutTask(tx, { id, roleId, companyId: null, roleVersion, now: clock.now() }));
  return id;
}

/** A role with `users` users (each holding it once), queued for fan-out. */
async function roleWithUsers(users: number, companyId: string | null = null) {
  const roleId = await seedRole(pool);
  const userIds = await seedUsers(pool, users, { companyId });
  await seedAssignments(pool, roleId, userIds);
  return { roleId, userIds };
}

const eventsOfRun = async (jobRunId?: string) =>
  (await outboxEvents<UserAccessChangedKafkaEvent>(pool, ACCESS_TOPIC)).filter((e) => !jobRunId || e.correlationId === jobRunId);

const eventsOfUsers = async (userIds: readonly string[]) => {
  const wanted = new Set(userIds);
  return (await outboxEvents<UserAccessChangedKafkaEvent>(pool, ACCESS_TOPIC)).filter((e) => wanted.has(e.key));
};

const perUser = (events: { key: string }[]) => {
  const m = new Map<string, number>();
  for (const e of events) m.set(e.key, (m.get(e.key) ?? 0) + 1);
  return m;
};

describe('AccessFanOutJob (seed 003 test table)', () => {
  test('Empty role: a role without active assignments completes at once, with no events', async () => {
    const roleId = await seedRole(pool);
    const revokedUser = await seedUsers(pool, 1);
    await seedAssignments(pool, roleId, revokedUser, { status: 'Revoked' });
    const taskId = await queueTask(roleId);
    const run = runCtx();
    const counts = await worker().runOnce(run);
    assert.equal(counts.completed, 1);
    const task = (await getTask(ctx.db, taskId))!;
    assert.equal(task.status, 'Completed');
    assert.equal(task.processedCount, 0);
    assert.equal(task.leaseExpiresAt, null);
    assert.ok(task.completedAt);
    assert.equal((await eventsOfRun(run.jobRunId)).length, 0);
  });

  test("Mass fan-out: a role with more users than BatchSize — one event per unique UserId over every page, ProcessedCount = users, the seed's log lines", async () => {
    const { roleId, userIds } = await roleWithUsers(25);
    // A second grant of the same role in another scope must not make a second event.
    await seedAssignments(pool, roleId, userIds.slice(0, 5), { scopeType: 'Organization', scopeOrganizationId: newId() });
    const taskId = await queueTask(roleId, 7);
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({ write: (chunk, _e, cb) => (lines.push(JSON.parse(String(chunk))), cb()) });
    const usersBefore = await metricValue(ctx.registry, 'identity_access_fanout_users_total');

    const run = runCtx(undefined, createLogger('info', sink));
    const counts = await worker().runOnce(run);
    assert.equal(counts.users, 25);
    assert.equal(counts.pages, 3);
    const task = (await getTask(ctx.db, taskId))!;
    assert.equal(task.status, 'Completed');
    assert.equal(task.processedCount, 25);
    assert.equal(task.cursor, userIds.at(-1));
    const events = await eventsOfRun(run.jobRunId);
    assert.deepEqual(events.map((e) => e.key).sort(), userIds);
    assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_users_total'), usersBefore + 25);
    assert.ok((await metricValue(ctx.registry, 'identity_access_fanout_task_lag_seconds', {}, 'identity_access_fanout_task_lag_seconds_count')) >= 1);
    assert.ok((await metricValue(ctx.registry, 'identity_access_fanout_size', { path: 'queued' }, 'identity_access_fanout_size_count')) >= 1);

    const msgs = lines.map((l) => l.msg);
    for (const m of ['job started', 'task dequeued', 'batch processed', 'task completed']) assert.ok(msgs.includes(m), m);
    assert.equal(msgs.filter((m) => m === 'batch processed').length, 3);
    const dequeued = lines.find((l) => l.msg === 'task dequeued')!;
    assert.deepEqual([dequeued.taskId, dequeued.roleId, dequeued.attempt], [taskId, roleId, 1]);
    const completed = lines.find((l) => l.msg === 'task completed')!;
    assert.equal(completed.processedCount, 25);
    assert.equal(typeof completed.durationMs, 'number');
    assert.ok(lines.every((l) => !JSON.stringify(l).includes('+7998')), 'no phone numbers in logs');
  });

  test('Under the runner, the kernel\'s batches are the pages: job_batches_total counts pages and job_batch_rows_total their users, not tasks', async (t) => {
    const { roleId } = await roleWithUsers(25);
    await queueTask(roleId);
    const replica = startReplica(t, db);
    replica.runner.register(worker());
    const result = await replica.runner.runNow(ACCESS_FANOUT_JOB);
    assert.equal(result.outcome, 'success');
    assert.equal(result.counts.pages, 3);
    const job = { job: ACCESS_FANOUT_JOB };
    assert.equal(await metricValue(replica.registry, 'job_batches_total', { ...job, phase: 'pages' }), 3);
    assert.equal(await metricValue(replica.registry, 'job_batches_total', { ...job, phase: 'tasks' }), 0, 'the one-task claim is not a batch');
    assert.equal(await metricValue(replica.registry, 'job_batch_rows_total', { ...job, phase: 'pages', outcome: 'claimed' }), 25);
    assert.equal(await metricValue(replica.registry, 'job_batch_duration_seconds', { ...job, phase: 'pages' }, 'job_batch_duration_seconds_count'), 3);
  });

  test('Full snapshot: the payload carries all active assignments of the user with RoleCode, not only the changed role; CompanyId is the user\'s', async () => {
    const company = newId();
    const org = newId();
    const target = await seedRole(pool, { code: 'target-role' });
    const other = await seedRole(pool, { code: 'other-role', companyId: company });
    const gone = await seedRole(pool, { code: 'gone-role' });
    const lapsed = await seedRole(pool, { code: 'lapsed-role' });
    const [user] = await seedUsers(pool, 1, { companyId: company });
    await seedAssignments(pool, target, [user!]);
    await seedAssignments(pool, other, [user!], { scopeType: 'Organization', scopeOrganizationId: org, expiresAt: new Date('2026-12-31T00:00:00Z') });
    await seedAssignments(pool, gone, [user!], { status: 'Revoked' });
    await seedAssignments(pool, lapsed, [user!], { expiresAt: new Date('2026-02-01T00:00:00Z') }); // past, not yet marked
    await queueTask(target, 4);
    const run = runCtx();
    await worker().runOnce(run);

    const [event] = await eventsOfRun(run.jobRunId);
    assert.ok(event);
    assert.equal(event.eventType, 'UserAccessChangedKafkaEvent');
    assert.equal(event.aggregateType, 'User');
    assert.equal(event.key, user);
    assert.equal(event.payload.UserId, user);
    assert.equal(event.payload.CompanyId, company);
    assert.equal(event.payload.ChangeReason, 'RolePermissionsChanged');
    const byCode = Object.fromEntries(event.payload.ActiveAssignments.map((a) => [a.RoleCode, a]));
    assert.deepEqual(Object.keys(byCode).sort(), ['other-role', 'target-role']);
    assert.equal(byCode['other-role']!.ScopeType, 'Organization');
    assert.equal(byCode['other-role']!.ScopeOrganizationId, org);
    assert.equal(byCode['other-role']!.RoleId, other);
    assert.equal(byCode['other-role']!.ExpiresAt, '2026-12-31T00:00:00.000Z');
    assert.equal(byCode['target-role']!.ScopeType, 'Platform');
    assert.equal(byCode['target-role']!.ExpiresAt, null);
  });

  test('Version guard: event.Version = the task\'s RoleVersion (the role version set-role-permissions produced), tasks in CreatedAt order', async () => {
    const { roleId, userIds } = await roleWithUsers(3);
    const first = await setRolePermissions(ctx, roleId, ['crm.deals.read']);
    clock.advance(1);
    const second = await setRolePermissions(ctx, roleId, ['crm.deals.read', 'crm.deals.write']);
    assert.equal(first.fanOut.mode, 'queued');
    assert.deepEqual([first.role.version, second.role.version], [2, 3]);
    await worker().runOnce(runCtx());
    for (const u of userIds) {
      const versions = (await eventsOfUsers([u])).map((e) => e.payload.Version);
      assert.deepEqual(versions, [2, 3]);
    }
  });

  test('Parallel instances: two workers over five queued tasks — each task processed by one, every user exactly once', async () => {
    const roles = [];
    for (let i = 0; i < 5; i++) roles.push(await roleWithUsers(12));
    const taskIds = [];
    for (const r of roles) taskIds.push(await queueTask(r.roleId));
    // Each instance waits after its first committed page until the other has committed one too, so
    // both provably hold a task at the same time (on a busy machine one could otherwise drain all five
    // before the other starts).
    let started = 0;
    let bothStarted!: () => void;
    const barrier = new Promise<void>((r) => (bothStarted = r));
    const meetOnFirstPage = () => {
      let first = true;
      return {
        pageCommitted: async () => {
          if (first) {
            first = false;
            if (++started === 2) bothStarted();
            await barrier;
          }
          await new Promise<void>((r) => setImmediate(r));
        },
      };
    };
    // A second instance: its own drizzle handle and metrics registry over the same database.
    const other = identityContext(pool, clock, settings);
    const b = accessFanOutJob({ db: other.db, metrics: other.metrics, settings: settings.fanOut, testHooks: meetOnFirstPage() });
    const [ca, cb] = await Promise.all([worker(meetOnFirstPage()).runOnce(runCtx()), b.runOnce(runCtx())]);
    assert.ok(ca.tasks > 0 && cb.tasks > 0, `both instances worked (${ca.tasks} + ${cb.tasks})`);
    assert.equal(ca.tasks + cb.tasks, 5);
    for (const id of taskIds) {
      const task = (await getTask(ctx.db, id))!;
      assert.equal(task.status, 'Completed');
      assert.equal(task.attemptCount, 1, 'taken once');
      assert.equal(task.processedCount, 12);
    }
    for (const r of roles) {
      const counts = perUser(await eventsOfUsers(r.userIds));
      assert.equal(counts.size, 12);
      assert.ok([...counts.values()].every((n) => n === 1));
    }
  });

  test('Large role, two instances: the first page splits the role into UserId-range sub-tasks, each leased on its own; both workers do part; every user gets exactly one event', async () => {
    const { roleId, userIds } = await roleWithUsers(60);
    const taskId = await queueTask(roleId);
    const over = { rangeSize: 10 }; // page 1 + 10 users stay with the task; 10 users per sub-task after that
    const sizeCount = () => metricValue(ctx.registry, 'identity_access_fanout_size', { path: 'queued' }, 'identity_access_fanout_size_count');
    const sizeSum = () => metricValue(ctx.registry, 'identity_access_fanout_size', { path: 'queued' }, 'identity_access_fanout_size_sum');
    const [countBefore, sumBefore] = [await sizeCount(), await sizeSum()];
    // Instance B starts once A's first page (the split) committed; A goes on once B committed a page
    // of a sub-task, so both provably work on the one role at the same time.
    let bCommitted!: () => void;
    const bWorked = new Promise<void>((r) => (bCommitted = r));
    let runB: Promise<Awaited<ReturnType<ReturnType<typeof worker>['runOnce']>>> | undefined;
    let aPages = 0;
    const a = worker(
      {
        pageCommitted: async () => {
          if (++aPages === 1) {
            runB = worker({ pageCommitted: async () => bCommitted() }, over).runOnce(runCtx());
            void runB.finally(bCommitted); // B found nothing to do: go on, the asserts say so
            await bWorked;
          }
        },
      },
      over,
    );
    const ca = await a.runOnce(runCtx());
    const cb = await runB!;
    assert.equal(ca.subTasks, 5, 'split into the ranges after u20, u30, u40, u50, u60');
    assert.ok(ca.tasks > 0 && cb.tasks > 0, `both instances took tasks of the role (${ca.tasks} + ${cb.tasks})`);
    assert.equal(ca.tasks + cb.tasks, 6);
    assert.equal(ca.users + cb.users, 60);

    const { rows } = await pool.query(
      `select id, status, attempt_count as "attemptCount", processed_count as "processedCount", parent_id as "parentId", cursor, range_end as "rangeEnd"
         from identity.access_fanout_tasks where id = $1 or parent_id = $1 order by created_at, id`,
      [taskId],
    );
    assert.equal(rows.length, 6);
    assert.ok(rows.every((r) => r.status === 'Completed' && r.attemptCount === 1), 'each range taken once');
    assert.deepEqual(
      rows.filter((r) => r.parentId === taskId).map((r) => [r.processedCount, r.rangeEnd]),
      [[10, userIds[29]], [10, userIds[39]], [10, userIds[49]], [10, userIds[59]], [0, null]],
    );
    assert.equal((await getTask(ctx.db, taskId))!.rangeEnd, userIds[19]);
    const per = perUser(await eventsOfUsers(userIds));
    assert.equal(per.size, 60);
    assert.ok([...per.values()].every((n) => n === 1), 'exactly one event per user');
    assert.deepEqual([await sizeCount(), await sizeSum()], [countBefore + 1, sumBefore + 60], 'the role is one fan-out of 60 users in the metrics');
  });

  test('A task that outlives its lease is taken over; the first worker never moves its Cursor afterwards', async () => {
    const { roleId, userIds } = await roleWithUsers(35);
    const taskId = await queueTask(roleId);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let paused!: () => void;
    const pausedAfterFirstPage = new Promise<void>((r) => (paused = r));
    let pages = 0;
    const slow = worker({
      pageCommitted: async () => {
        if (++pages === 1) {
          paused();
          await gate; // stalls past its lease (a GC pause, a stuck network call…)
        }
      },
    });
    const slowRun = slow.runOnce(runCtx());
    await pausedAfterFirstPage;
    const afterFirst = (await getTask(ctx.db, taskId))!;
    assert.equal(afterFirst.processedCount, BATCH);

    clock.advance(LEASE_MS + 1);
    const takeover = await worker().runOnce(runCtx());
    assert.equal(takeover.completed, 1);
    const done = (await getTask(ctx.db, taskId))!;
    assert.equal(done.status, 'Completed');
    assert.equal(done.attemptCount, 2);

    release();
    const slowCounts = await slowRun;
    assert.equal(slowCounts.leasesLost, 1);
    const final = (await getTask(ctx.db, taskId))!;
    assert.deepEqual([final.status, final.processedCount, final.cursor, final.attemptCount], ['Completed', 35, userIds.at(-1), 2]);
    const counts = perUser(await eventsOfUsers(userIds));
    assert.equal(counts.size, 35);
    assert.ok([...counts.values()].every((n) => n === 1), 'the stale worker wrote no events after the takeover');
    assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_errors_total', { kind: 'lease_lost' }), 1);
  });

  test('Poison: AttemptCount reaching MaxAttempts turns a failing task Failed with the alert metrics; other tasks keep flowing; replay resumes it', async () => {
    const poison = await roleWithUsers(3);
    const healthy = await roleWithUsers(4);
    const poisonTask = await queueTask(poison.roleId);
    const healthyTask = await queueTask(healthy.roleId);
    await pool.query(`create or replace function public.fail_fanout() returns trigger language plpgsql as $$
                      begin raise exception 'simulated storage failure'; end $$`);
    await pool.query(`create trigger fail_fanout before update on identity.access_fanout_tasks for each row
                      when (new.role_id = '${poison.roleId}' and new.cursor is distinct from old.cursor) execute function public.fail_fanout()`);
    const errorsBefore = await metricValue(ctx.registry, 'identity_access_fanout_errors_total', { kind: 'page_failed' });

    const first = await worker().runOnce(runCtx());
    assert.equal(first.pageErrors, 1);
    assert.equal((await getTask(ctx.db, healthyTask))!.status, 'Completed', 'the healthy task behind it still ran');
    const held = (await getTask(ctx.db, poisonTask))!;
    assert.deepEqual([held.status, held.attemptCount, held.processedCount], ['InProgress', 1, 0]);
    assert.match(held.lastError ?? '', /simulated storage failure/);
    assert.equal((await worker().runOnce(runCtx())).tasks, 0, 'retried only after its retry backoff');

    for (const attempt of [2, 3]) {
      clock.advance(LEASE_MS + 1);
      const counts = await worker().runOnce(runCtx());
      assert.equal(counts.pageErrors, 1);
      assert.equal((await getTask(ctx.db, poisonTask))!.attemptCount, attempt);
    }
    const failed = (await getTask(ctx.db, poisonTask))!;
    assert.equal(failed.status, 'Failed');
    assert.equal(failed.leaseExpiresAt, null);
    assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_tasks_failed'), 1);
    assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_errors_total', { kind: 'page_failed' }), errorsBefore + 3);
    assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_tasks_poisoned_total'), 1);
    assert.equal((await eventsOfUsers(poison.userIds)).length, 0);
    clock.advance(LEASE_MS + 1);
    assert.equal((await worker().runOnce(runCtx())).tasks, 0, 'a Failed task is not retried');

    await pool.query(`drop trigger fail_fanout on identity.access_fanout_tasks`);
    const [replayed] = await ctx.db.transaction((tx) => replayFailedTasks(tx, { id: poisonTask }, 1, clock.now()));
    assert.deepEqual([replayed?.status, replayed?.attemptCount], ['Pending', 0]);
    await worker().runOnce(runCtx());
    assert.equal((await getTask(ctx.db, poisonTask))!.status, 'Completed');
    assert.equal((await eventsOfUsers(poison.userIds)).length, 3);
    assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_tasks_failed'), 0);
  });

  test('A page that fails is retried after the short retry backoff (retryBaseMs), not after the whole lease; AttemptCount still counts', async () => {
    const { roleId, userIds } = await roleWithUsers(15);
    const taskId = await queueTask(roleId);
    let failures = 0;
    const failOnce = {
      pageWritten: async (page: { rows: number; cursor: string | null }) => {
        // The second page fails once, after the first committed.
        if (page.cursor === userIds[14] && failures++ === 0) throw new Error('simulated storage failure on page 2');
      },
    };
    const first = await worker(failOnce).runOnce(runCtx());
    assert.deepEqual([first.pageErrors, first.users], [1, BATCH]);
    const held = (await getTask(ctx.db, taskId))!;
    assert.deepEqual([held.status, held.attemptCount, held.processedCount], ['InProgress', 1, BATCH]);
    assert.match(held.lastError ?? '', /simulated storage failure/);
    // Retried once the backoff (base 1000 ms, up to 20 % jitter) has passed — long before the lease.
    const retryIn = held.leaseExpiresAt!.getTime() - clock.now().getTime();
    assert.ok(retryIn >= 1000 && retryIn <= 1200, `retry due in ${retryIn} ms, not the ${LEASE_MS} ms lease`);
    assert.equal((await worker(failOnce).runOnce(runCtx())).tasks, 0, 'not before the backoff');

    clock.advance(1200);
    const retry = await worker(failOnce).runOnce(runCtx());
    assert.deepEqual([retry.tasks, retry.completed, retry.users], [1, 1, 15 - BATCH]);
    const done = (await getTask(ctx.db, taskId))!;
    assert.deepEqual([done.status, done.attemptCount, done.processedCount], ['Completed', 2, 15]);
    const per = perUser(await eventsOfUsers(userIds));
    assert.equal(per.size, 15);
    assert.ok([...per.values()].every((n) => n === 1), 'the failed page rolled back; nothing doubled');
  });

  test('Poison at claim: a task whose last allowed lease expired (worker died) becomes Failed instead of being taken again', async () => {
    const { roleId } = await roleWithUsers(2);
    const taskId = await queueTask(roleId);
    await pool.query(`update identity.access_fanout_tasks set status = 'InProgress', attempt_count = 3, lease_expires_at = $2 where id = $1`, [
      taskId,
      new Date(clock.now().getTime() - 1),
    ]);
    const counts = await worker().runOnce(runCtx());
    assert.deepEqual([counts.failed, counts.tasks], [1, 0]);
    const task = (await getTask(ctx.db, taskId))!;
    assert.equal(task.status, 'Failed');
    assert.match(task.lastError ?? '', /max attempts/);
    await ctx.db.transaction((tx) => replayFailedTasks(tx, { id: taskId }, 1, clock.now()));
    await worker().runOnce(runCtx());
    assert.equal((await getTask(ctx.db, taskId))!.status, 'Completed');
  });

  test('Cancellation: a stop between pages ends the run gracefully; committed pages stay and the next run resumes from Cursor', async () => {
    const { roleId, userIds } = await roleWithUsers(25);
    const taskId = await queueTask(roleId);
    const stop = new AbortController();
    const counts = await worker({ pageCommitted: async () => stop.abort() }).runOnce(runCtx(stop.signal));
    assert.equal(counts.users, BATCH);
    const paused = (await getTask(ctx.db, taskId))!;
    assert.deepEqual([paused.status, paused.processedCount, paused.cursor, paused.attemptCount], ['Pending', BATCH, userIds[BATCH - 1], 1]);
    assert.equal(paused.leaseExpiresAt, null, 'lease released for any instance to resume');
    assert.equal((await eventsOfUsers(userIds)).length, BATCH);

    await worker().runOnce(runCtx());
    const done = (await getTask(ctx.db, taskId))!;
    assert.deepEqual([done.status, done.processedCount], ['Completed', 25]);
    const per = perUser(await eventsOfUsers(userIds));
    assert.equal(per.size, 25);
    assert.ok([...per.values()].every((n) => n === 1));
  });

  test('the queue gauges count Pending and lease-expired tasks as backlog', async () => {
    const { roleId } = await roleWithUsers(1);
    await pool.query(`update identity.access_fanout_tasks set status = 'Completed' where status in ('Pending', 'InProgress')`);
    await queueTask(roleId);
    await queueTask(roleId);
    assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_queue_backlog'), 2);
    await worker().runOnce(runCtx());
    assert.equal(await metricValue(ctx.registry, 'identity_access_fanout_queue_backlog'), 0);
  });
});
