import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { sql } from 'drizzle-orm';
import { createTestDatabase } from '../../../support/db.ts';
import { waitFor } from '../../../support/wait.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { accessFanOutJob, type AccessFanOutWorkerOptions } from '../../../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { getTask, insertFanOutTask } from '../../../../src/modules/identity/access-fanout/fanout-sql.ts';
import { commitOrderedIds, databaseClockMicros } from '../../../../src/modules/identity/assignments/access-events.ts';
import { loadAccessSnapshots } from '../../../../src/modules/identity/assignments/access-sql.ts';
import { revokeRoleAssignment } from '../../../../src/modules/identity/assignments/assignment-operations.ts';
import type { UserAccessChangedKafkaEvent } from '../../../../src/contracts/identity-events.ts';
import { ACCESS_TOPIC, defaultSettings, identityContext, outboxEvents, seedAssignments, seedRole, seedUsers } from '../support.ts';

/**
 * Per-user event order is commit order (seed 003 is security-sensitive): a fan-out page and a revoke
 * of one of its users run as real concurrent transactions. Whatever the interleaving, the LAST
 * UserAccessChanged of each user in platform.outbox order (the order the publisher sends per key) must be the user's last
 * committed state — a fan-out snapshot read before a revoke must never be sent after it.
 *
 * The interleavings are forced with row locks the test holds in its own transactions, never sleeps.
 */

const db = await createTestDatabase({ poolMax: 12 });
const pool = db.pool;
const clock = new ManualClock('2026-03-01T09:00:00Z');
const BATCH = 2;
const settings = defaultSettings({ batchSize: BATCH, inlineFanOutThreshold: 0 });
const ctx = identityContext(pool, clock, settings);
const silent = createLogger('silent');
const runCtx = () => ({ jobRunId: newId(), signal: new AbortController().signal, log: silent, now: () => clock.now() });

function worker(hooks?: AccessFanOutWorkerOptions['testHooks']) {
  return accessFanOutJob({ db: ctx.db, metrics: ctx.metrics, settings: settings.fanOut, testHooks: hooks });
}

async function queuedRole(users: number) {
  const roleId = await seedRole(pool);
  const userIds = await seedUsers(pool, users);
  await seedAssignments(pool, roleId, userIds);
  const taskId = newId();
  clock.advance(1);
  await ctx.db.transaction((tx) => insertFanOutTask(tx, { id: taskId, roleId, companyId: null, roleVersion: 2, now: clock.now() }));
  return { roleId, userIds, taskId };
}

async function assignmentOf(roleId: string, userId: string): Promise<string> {
  const { rows } = await pool.query(`select id from identity.role_assignments where role_id = $1 and user_id = $2`, [roleId, userId]);
  return rows[0].id;
}

/** Backends of this database waiting for a lock right now. */
async function lockWaiters(): Promise<number> {
  const { rows } = await pool.query(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
  return rows[0].n;
}

/** A transaction of the test's own holding `lockSql`'s row lock until `release()`. */
async function holdLock(lockSql: string, params: unknown[]): Promise<{ release(): Promise<void> }> {
  const client: pg.PoolClient = await pool.connect();
  await client.query('begin');
  await client.query(lockSql, params);
  return {
    async release() {
      await client.query('commit');
      client.release();
    },
  };
}

/** Every user's last event in outbox order carries exactly the assignments committed now. */
async function assertLastEventIsLastState(userIds: readonly string[]): Promise<void> {
  const events = await outboxEvents<UserAccessChangedKafkaEvent>(pool, ACCESS_TOPIC);
  const current = await loadAccessSnapshots(ctx.db, userIds, clock.now());
  for (const snap of current) {
    const last = events.filter((e) => e.key === snap.userId).at(-1);
    assert.ok(last, `user ${snap.userId} got an event`);
    assert.deepEqual(
      last.payload.ActiveAssignments.map((a) => a.AssignmentId).sort(),
      snap.activeAssignments.map((a) => a.assignmentId).sort(),
      `user ${snap.userId}: the last event sent (${last.payload.ChangeReason}) is not the last committed state`,
    );
  }
}

describe('AccessFanOutJob: per-user event order follows commit order', () => {
  test('a revoke that commits while a page is between its read and its commit is still the last event of its user', async () => {
    const { roleId, userIds, taskId } = await queuedRole(6);
    const victims = userIds.slice(BATCH, 2 * BATCH); // page 2's users
    let taskLock: { release(): Promise<void> } | undefined;
    let firstPage!: () => void;
    const firstPageCommitted = new Promise<void>((r) => (firstPage = r));
    let pages = 0;
    // After page 1 commits, the test takes the task row, so page 2 reads its users and their
    // snapshots and then waits at its checkpoint (the task row) until the test lets it go.
    const run = worker({
      pageCommitted: async () => {
        if (++pages === 1) {
          taskLock = await holdLock(`select 1 from identity.access_fanout_tasks where id = $1 for update`, [taskId]);
          firstPage();
        }
      },
    }).runOnce(runCtx());
    await firstPageCommitted;
    await waitFor('page 2 waits at its checkpoint', async () => (await lockWaiters()) === 1);

    // The revokes run now, while page 2 is open: either they commit at once (page 2 then holds a
    // stale snapshot of them) or they wait for page 2 because it locked its users.
    let revoked = 0;
    const revokes = Promise.all(
      victims.map(async (u) => {
        await revokeRoleAssignment(ctx, await assignmentOf(roleId, u));
        revoked++;
      }),
    );
    await waitFor('the revokes committed or wait for page 2', async () => revoked === victims.length || (await lockWaiters()) === 1 + victims.length);

    await taskLock!.release();
    const counts = await run;
    await revokes;
    assert.equal(counts.completed, 1);
    assert.equal((await getTask(ctx.db, taskId))!.status, 'Completed');
    for (const u of victims) {
      const [snap] = await loadAccessSnapshots(ctx.db, [u], clock.now());
      assert.ok(!snap!.activeAssignments.some((a) => a.roleId === roleId), 'the revoke committed');
    }
    await assertLastEventIsLastState(userIds);
  });

  test('a revoke in flight before a page reads its user: the page waits for it and its snapshot already shows the revoke', async () => {
    const { roleId, userIds, taskId } = await queuedRole(4);
    const victim = userIds[0]!; // page 1
    const assignmentId = await assignmentOf(roleId, victim);
    // The revoke takes its user and then waits for the assignment row the test holds.
    const rowLock = await holdLock(`select 1 from identity.role_assignments where id = $1 for update`, [assignmentId]);
    const revoke = revokeRoleAssignment(ctx, assignmentId);
    await waitFor('the revoke holds its user and waits', async () => (await lockWaiters()) === 1);

    let pageDone = false;
    const run = worker()
      .runOnce(runCtx())
      .finally(() => (pageDone = true));
    await waitFor('page 1 committed or waits for the revoke', async () => pageDone || (await lockWaiters()) === 2);
    await rowLock.release();
    await revoke;
    const counts = await run;
    assert.equal(counts.completed, 1);
    assert.equal((await getTask(ctx.db, taskId))!.processedCount, userIds.length);
    await assertLastEventIsLastState(userIds);
  });
});

describe('commit-ordered event ids (one clock for every replica)', () => {
  test('ids of a later database clock reading sort after every id of an earlier one, even within one millisecond; a reading\'s ids ascend and are unique', () => {
    const base = 1_772_355_600_000_000n; // 2026-03-01T09:00:00Z in µs
    const seen = new Set<string>();
    for (let us = 0n; us < 1000n; us += 7n) {
      const earlier = commitOrderedIds(base + us, 3);
      const later = commitOrderedIds(base + us + 1n, 3); // the next microsecond of the same millisecond
      assert.deepEqual([...earlier].sort(), earlier, 'ascending within a reading');
      assert.ok(earlier.at(-1)! < later[0]!, `µs ${us}: ${earlier.at(-1)} < ${later[0]}`);
      for (const id of [...earlier, ...later]) {
        assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        seen.add(id);
      }
    }
    const again = commitOrderedIds(base, 2);
    assert.notEqual(again[0], commitOrderedIds(base, 2)[0], 'two transactions of the same microsecond get distinct ids');
    assert.ok(seen.size > 0);
  });

  test('the clock is the database server\'s and moves within a transaction (clock_timestamp, not now())', async () => {
    await ctx.db.transaction(async (tx) => {
      const a = await databaseClockMicros(tx);
      await tx.execute(sql`select pg_sleep(0.001)`);
      const b = await databaseClockMicros(tx);
      assert.ok(b > a, `${b} > ${a}`);
    });
  });
});
