import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../../support/db.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { createActivityRetention } from '../../../../src/modules/user-activity/retention/activity-retention.ts';
import { captureLog, clearActivity, closerContext, countWhere, seedSession, seedView, T0 } from '../support.ts';
import { metricValue } from '../../../support/metrics.ts';

const t = await createTestDatabase();
const clock = new ManualClock(T0);
const DAY = 86_400_000;
const daysAgo = (d: number) => new Date(T0.getTime() - d * DAY);

beforeEach(() => clearActivity(t.pool));

/** A session with `views` views, all ended `endedDaysAgo` days ago (or still Active when null). */
async function sessionEnded(endedDaysAgo: number | null, views = 2): Promise<string> {
  const at = daysAgo(endedDaysAgo ?? 800);
  const id = await seedSession(t.pool, { createdAt: at, lastActivityAt: at });
  for (let i = 0; i < views; i += 1) await seedView(t.pool, { sessionId: id, createdAt: at, lastActivityAt: at });
  if (endedDaysAgo !== null) {
    for (const table of ['property_object_views', 'sessions']) {
      await t.pool.query(
        `update user_activity.${table} set status = 'Inactive', ended_at = $2, duration_seconds = 0
          ${table === 'sessions' ? ", end_reason = 'Inactivity'" : ''}
          where ${table === 'sessions' ? 'id' : 'session_id'} = $1`,
        [id, at],
      );
    }
  }
  return id;
}

test('deletes Inactive views, then their sessions, that ended more than 12 months ago — in batches; keeps everything younger or Active', async () => {
  const old = [await sessionEnded(400), await sessionEnded(366)];
  const young = await sessionEnded(300);
  const active = await sessionEnded(null); // created long ago but still Active: never deleted
  await t.pool.query(
    `insert into user_activity.counted_property_object_views values ($1, $2, $3), ($4, $5, $6)`,
    [newId(), newId(), daysAgo(400), newId(), newId(), daysAgo(10)],
  );
  const registry = new Registry();
  const retention = createActivityRetention({
    db: t.db,
    registry,
    settings: { USER_ACTIVITY_RETENTION_MONTHS: 12 },
    batchSize: 1,
  });

  const counts = await retention.runOnce(closerContext(clock, captureLog().log));

  assert.deepEqual(counts, { batches: 7, claimed: 7, failed: 0, released: 0, deletedViews: 4, deletedSessions: 2, deletedCountedViews: 1 });
  for (const id of old) assert.equal(await countWhere(t.pool, `select count(*) as n from user_activity.sessions where id = $1`, [id]), 0);
  for (const id of [young, active]) {
    assert.equal(await countWhere(t.pool, `select count(*) as n from user_activity.sessions where id = $1`, [id]), 1);
    assert.equal(await countWhere(t.pool, `select count(*) as n from user_activity.property_object_views where session_id = $1`, [id]), 2);
  }
  assert.equal(await countWhere(t.pool, `select count(*) as n from user_activity.counted_property_object_views`), 1);
  assert.equal(await metricValue(registry, 'user_activity_retention_deleted_total', { entity: 'view' }), 4);
  assert.deepEqual(await retention.runOnce(closerContext(clock, captureLog().log)), { batches: 0, claimed: 0, failed: 0, released: 0, deletedViews: 0, deletedSessions: 0, deletedCountedViews: 0 });
});

test('a stop request ends the purge between batches', async () => {
  await sessionEnded(400, 3);
  const stop = new AbortController();
  stop.abort();
  const retention = createActivityRetention({
    db: t.db,
    registry: new Registry(),
    settings: { USER_ACTIVITY_RETENTION_MONTHS: 12 },
    batchSize: 1,
  });
  const counts = await retention.runOnce(closerContext(clock, captureLog().log, stop.signal));
  assert.deepEqual(counts, { batches: 0, claimed: 0, failed: 0, released: 0, deletedViews: 0, deletedSessions: 0, deletedCountedViews: 0 });
});
