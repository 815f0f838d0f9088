import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../../support/db.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { ManualClock } from '../../../../src/platform/time.ts';
import { createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../../src/modules/user-activity/closer/activity-closer.ts';
import { stuckRowsGauge } from '../../../../src/modules/user-activity/closer/closer-metrics.ts';
import type { ActivityCloserSettings } from '../../../../src/modules/user-activity/settings.ts';
import { captureLog, clearActivity, installCloseFailures, closerContext, MIN, minutesBefore, seedSession, seedStaleSessions, seedView, T0 } from '../support.ts';
import { metricValue } from '../../../support/metrics.ts';

/** How a closer run is shaped: phases, batching, MaxRunDuration, its log lines and metrics. */

const t = await createTestDatabase();
const clock = new ManualClock(T0);
const failures = await installCloseFailures(t.pool);

beforeEach(async () => {
  await failures.clear();
  await clearActivity(t.pool);
  clock.set(T0);
});

function closer(over: Partial<ActivityCloserSettings> = {}, registry = new Registry()) {
  return createActivityCloser({ db: t.db, registry, settings: { ...DEFAULT_CLOSER_SETTINGS, ...over } });
}

const STALE = minutesBefore(13);

/** A stale session with its views: one idle as long as the session, one recently active. */
async function staleSessionWithViews() {
  const sessionId = await seedSession(t.pool, { createdAt: minutesBefore(40), lastActivityAt: STALE });
  await seedView(t.pool, { sessionId, createdAt: minutesBefore(30), lastActivityAt: minutesBefore(20) });
  await seedView(t.pool, { sessionId, createdAt: minutesBefore(15), lastActivityAt: STALE });
  return sessionId;
}

describe('ActivityCloserJob — run shape', () => {
  test('phase A takes only views of live sessions; views of a stale session close in phase B with it', async () => {
    await staleSessionWithViews();
    const { log, lines } = captureLog();

    await closer().runOnce(closerContext(clock, log));

    const batches = lines.filter((l) => l.msg === 'batch processed');
    assert.deepEqual(
      batches.map((b) => [b.phase, b.rows, b.closed]),
      [['stale_sessions', 1, 3]],
    );
  });

  test('repeats while batches are full: a backlog larger than BatchSize is cleared in one run', async () => {
    await seedStaleSessions(t.pool, 11, 1, STALE);
    const { log, lines } = captureLog();

    const counts = await closer({ USER_ACTIVITY_CLOSER_BATCH_SIZE: 3 }).runOnce(closerContext(clock, log));

    assert.equal(counts.closedSessions, 11);
    assert.equal(lines.filter((l) => l.msg === 'batch processed' && l.phase === 'stale_sessions').length, 4);
  });

  test('a full batch whose every row fails on its own stops the phase (no failure flood); the next tick retries', async () => {
    await seedStaleSessions(t.pool, 6, 1, STALE);
    const { rows } = await t.pool.query<{ id: string }>(`select id from user_activity.sessions`);
    await failures.failOn(...rows.map((r) => r.id));
    const registry = new Registry();
    const { log, lines } = captureLog();

    const counts = await closer({ USER_ACTIVITY_CLOSER_BATCH_SIZE: 2 }, registry).runOnce(closerContext(clock, log));

    assert.deepEqual(counts, { batches: 1, claimed: 2, failed: 2, released: 0, closedSessions: 0, closedViews: 0, backlogRemaining: 12 });
    assert.equal(lines.filter((l) => l.msg === 'item failed').length, 2);
    assert.ok(lines.some((l) => l.msg === 'every row of the batch failed; phase stopped until the next tick'));
    await failures.clear();
    assert.equal((await closer({ USER_ACTIVITY_CLOSER_BATCH_SIZE: 2 }).runOnce(closerContext(clock, captureLog().log))).closedSessions, 6);
  });

  test('MaxRunDuration: the run ends after the batch that crossed it; the next tick takes the rest', async () => {
    await seedStaleSessions(t.pool, 9, 1, STALE);
    const { log, onLine } = captureLog();
    onLine((l) => {
      if (l.msg === 'batch processed') clock.advance(6 * MIN); // each batch "takes" 6 minutes
    });
    const c = closer({ USER_ACTIVITY_CLOSER_BATCH_SIZE: 3 });

    const counts = await c.runOnce(closerContext(clock, log));

    assert.equal(counts.closedSessions, 3);
    assert.equal(counts.backlogRemaining, 12, '6 sessions + their 6 views are left');
    const next = await c.runOnce(closerContext(clock, captureLog().log));
    assert.deepEqual(next, { batches: 2, claimed: 6, failed: 0, released: 0, closedSessions: 6, closedViews: 6, backlogRemaining: 0 });
  });

  test('logs the seed\'s lines: started (cutoff), batch processed, completed (counts, durationMs, backlogRemaining)', async () => {
    await staleSessionWithViews();
    const { log, lines } = captureLog();
    const ctx = closerContext(clock, log);

    await closer().runOnce(ctx);

    const started = lines.find((l) => l.msg === 'job started' && l.level === 30);
    assert.equal(started?.cutoff, minutesBefore(12).toISOString());
    const completed = lines.find((l) => l.msg === 'job completed');
    assert.equal(completed?.level, 30);
    for (const key of ['closedSessions', 'closedViews', 'durationMs', 'backlogRemaining']) assert.ok(key in completed!, key);
  });

  test('metrics: closed counters, close lag, run duration, backlog after the run', async () => {
    await staleSessionWithViews();
    const registry = new Registry();
    await closer({}, registry).runOnce(closerContext(clock, captureLog().log));

    assert.equal(await metricValue(registry, 'activity_closer_sessions_closed_total'), 1);
    assert.equal(await metricValue(registry, 'activity_closer_views_closed_total'), 2);
    assert.equal(await metricValue(registry, 'activity_closer_run_duration_ms', {}, 'activity_closer_run_duration_ms_count'), 1);
    assert.equal(
      await metricValue(registry, 'activity_closer_close_lag_seconds', { entity: 'session' }, 'activity_closer_close_lag_seconds_sum'),
      13 * 60,
    );
    assert.equal(await metricValue(registry, 'activity_closer_batch_backlog'), 0);
    assert.equal(await metricValue(registry, 'activity_closer_errors_total'), 0);
  });

  test('alert gauge: Active rows idle for more than 2 × InactivityThreshold, read at scrape time without any run', async () => {
    const stuck = await seedSession(t.pool, { createdAt: minutesBefore(60), lastActivityAt: minutesBefore(25) });
    await seedView(t.pool, { sessionId: stuck, createdAt: minutesBefore(60), lastActivityAt: minutesBefore(30) });
    await staleSessionWithViews(); // stale (13 min, views 20 and 13 min) but not yet stuck
    const registry = new Registry();
    stuckRowsGauge(registry, t.db, clock, 12 * MIN);

    assert.equal(await metricValue(registry, 'user_activity_stuck_active_rows', { entity: 'session' }), 1);
    assert.equal(await metricValue(registry, 'user_activity_stuck_active_rows', { entity: 'view' }), 1);
    clock.advance(12 * MIN);
    assert.equal(await metricValue(registry, 'user_activity_stuck_active_rows', { entity: 'session' }), 2);
  });
});
