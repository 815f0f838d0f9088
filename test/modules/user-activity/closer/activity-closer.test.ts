import { after, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../../support/db.ts';
import { createDb, createPool } from '../../../../src/platform/db/index.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../../src/modules/user-activity/closer/activity-closer.ts';
import type { ActivityCloserSettings } from '../../../../src/modules/user-activity/settings.ts';
import { captureLog, clearActivity, closerContext, countWhere, holdViewLocks, installCloseFailures, MIN, minutesBefore, outboxEvents, seedSession, seedStaleSessions, seedView, sessionRow, T0, viewRow, waitForLockWaiters } from '../support.ts';
import { metricValue } from '../../../support/metrics.ts';

const t = await createTestDatabase();
const clock = new ManualClock(T0);
const failures = await installCloseFailures(t.pool);

beforeEach(async () => {
  await failures.clear();
  await clearActivity(t.pool);
  clock.set(T0);
});

function closer(over: Partial<ActivityCloserSettings> = {}, registry = new Registry(), db = t.db) {
  return { ...createActivityCloser({ db, registry, settings: { ...DEFAULT_CLOSER_SETTINGS, ...over } }), registry };
}

const STALE = minutesBefore(13); // idle past the 12-minute threshold
const LIVE = minutesBefore(1);

/** A stale session with its views: one idle as long as the session, one recently active. */
async function staleSessionWithViews() {
  const sessionId = await seedSession(t.pool, { createdAt: minutesBefore(40), lastActivityAt: STALE });
  const oldView = await seedView(t.pool, { sessionId, createdAt: minutesBefore(30), lastActivityAt: minutesBefore(20) });
  const freshView = await seedView(t.pool, { sessionId, createdAt: minutesBefore(15), lastActivityAt: STALE });
  return { sessionId, views: [oldView, freshView] };
}

const countActive = () =>
  countWhere(
    t.pool,
    `select (select count(*) from user_activity.sessions where status = 'Active')
          + (select count(*) from user_activity.property_object_views where status = 'Active') as n`,
  );

describe('ActivityCloserJob — the seed\'s test table', () => {
  test('Empty batch: nothing Active older than the cutoff → no-op success, no events', async () => {
    const live = await seedSession(t.pool, { createdAt: minutesBefore(30), lastActivityAt: LIVE });
    await seedView(t.pool, { sessionId: live, createdAt: minutesBefore(5), lastActivityAt: minutesBefore(11) });
    const { log, lines } = captureLog();

    const counts = await closer().runOnce(closerContext(clock, log));

    assert.deepEqual(counts, { batches: 0, claimed: 0, failed: 0, released: 0, closedSessions: 0, closedViews: 0, backlogRemaining: 0 });
    assert.equal(await countActive(), 2);
    assert.deepEqual(await outboxEvents(t.pool), []);
    assert.ok(lines.every((l) => l.level <= 20), 'an idle run logs at debug only');
  });

  test('Stale session with open views: session and every view Inactive, durations set, one event each (INV-LV-007)', async () => {
    const { sessionId, views } = await staleSessionWithViews();
    clock.advance(1500); // EndedAt is the closing moment, not the run's cutoff
    const ctx = closerContext(clock, captureLog().log);

    const counts = await closer().runOnce(ctx);

    assert.deepEqual(counts, { batches: 1, claimed: 1, failed: 0, released: 0, closedSessions: 1, closedViews: 2, backlogRemaining: 0 });
    const s = await sessionRow(t.pool, sessionId);
    assert.equal(s.status, 'Inactive');
    assert.equal(s.end_reason, 'Inactivity');
    assert.deepEqual(s.ended_at, clock.now());
    assert.equal(s.duration_seconds, 27 * 60); // LastActivityAt − CreatedAt = (T0−13) − (T0−40)
    const [v1, v2] = [await viewRow(t.pool, views[0]!), await viewRow(t.pool, views[1]!)];
    assert.equal(v1.status, 'Inactive');
    assert.equal(v1.duration_seconds, 10 * 60);
    assert.equal(v2.status, 'Inactive', 'closed with its session whatever its own LastActivityAt');
    assert.equal(v2.duration_seconds, 2 * 60);

    const events = await outboxEvents(t.pool);
    assert.deepEqual(events.filter((e) => e.event_type === 'SessionEndedKafkaEvent').map((e) => e.aggregate_id), [sessionId]);
    assert.deepEqual(
      events.filter((e) => e.event_type === 'PropertyObjectViewEndedKafkaEvent').map((e) => e.aggregate_id).sort(),
      [...views].sort(),
    );
    for (const e of events) {
      assert.equal(e.contract_version, 1);
      assert.equal(e.key, e.aggregate_id);
      assert.equal(e.correlation_id, ctx.jobRunId, 'correlationId = jobRunId');
    }
  });

  test('Hanging view in a live session: the view is closed with its event, the session stays Active (INV-LV-004)', async () => {
    const sessionId = await seedSession(t.pool, { createdAt: minutesBefore(60), lastActivityAt: LIVE });
    const hanging = await seedView(t.pool, { sessionId, createdAt: minutesBefore(50), lastActivityAt: minutesBefore(13) });
    const watched = await seedView(t.pool, { sessionId, createdAt: minutesBefore(50), lastActivityAt: minutesBefore(2) });

    const counts = await closer().runOnce(closerContext(clock, captureLog().log));

    assert.deepEqual(counts, { batches: 1, claimed: 1, failed: 0, released: 0, closedSessions: 0, closedViews: 1, backlogRemaining: 0 });
    assert.equal((await viewRow(t.pool, hanging)).status, 'Inactive');
    assert.equal((await viewRow(t.pool, hanging)).duration_seconds, 37 * 60);
    assert.equal((await viewRow(t.pool, watched)).status, 'Active');
    assert.equal((await sessionRow(t.pool, sessionId)).status, 'Active');
    const events = await outboxEvents(t.pool);
    assert.deepEqual(events.map((e) => [e.event_type, e.aggregate_id]), [['PropertyObjectViewEndedKafkaEvent', hanging]]);
  });

  test('Idempotency/restart: a second run over the same data closes 0 rows and adds no events', async () => {
    await staleSessionWithViews();
    const c = closer();
    await c.runOnce(closerContext(clock, captureLog().log));
    const before = await outboxEvents(t.pool);
    clock.advance(MIN);

    const again = await c.runOnce(closerContext(clock, captureLog().log));
    const fresh = await closer().runOnce(closerContext(clock, captureLog().log)); // a restarted instance

    assert.deepEqual(again, { batches: 0, claimed: 0, failed: 0, released: 0, closedSessions: 0, closedViews: 0, backlogRemaining: 0 });
    assert.deepEqual(fresh, again);
    assert.equal((await outboxEvents(t.pool)).length, before.length);
  });

  test('Parallel instances: two closers never close a row twice (FOR UPDATE SKIP LOCKED)', async () => {
    await seedStaleSessions(t.pool, 300, 3, STALE);
    const liveSession = await seedSession(t.pool, { createdAt: minutesBefore(60), lastActivityAt: LIVE });
    for (let i = 0; i < 30; i += 1) await seedView(t.pool, { sessionId: liveSession, createdAt: minutesBefore(60), lastActivityAt: minutesBefore(20) });
    const otherPool = createPool(t.url, 4);
    after(() => otherPool.end());
    const registry = new Registry();
    const [a, b] = [closer({ USER_ACTIVITY_CLOSER_BATCH_SIZE: 7 }, registry), closer({ USER_ACTIVITY_CLOSER_BATCH_SIZE: 7 }, registry, createDb(otherPool))];

    const [ra, rb] = await Promise.all([
      a.runOnce(closerContext(clock, captureLog().log)),
      b.runOnce(closerContext(clock, captureLog().log)),
    ]);

    assert.equal(ra.closedSessions! + rb.closedSessions!, 300);
    assert.equal(ra.closedViews! + rb.closedViews!, 900 + 30);
    assert.ok(ra.closedSessions! > 0 && rb.closedSessions! > 0, 'both instances did part of the work');
    assert.equal(ra.failed + rb.failed, 0);
    assert.equal(await countActive(), 1, 'only the live session is left');
    const dupes = await countWhere(
      t.pool,
      `select count(*) as n from (select aggregate_id from platform.outbox group by aggregate_id having count(*) > 1) d`,
    );
    assert.equal(dupes, 0, 'one event per aggregate');
    assert.equal((await outboxEvents(t.pool)).length, 300 + 930);
    assert.equal(await metricValue(registry, 'activity_closer_sessions_closed_total'), 300);
    assert.equal(await metricValue(registry, 'activity_closer_views_closed_total'), 930);
  });

  test('UserId in payload: property-object-view-ended carries the session\'s current UserId (linked after the view opened)', async () => {
    const userId = newId();
    const stale = await seedSession(t.pool, { createdAt: minutesBefore(40), lastActivityAt: STALE });
    const viewOfStale = await seedView(t.pool, { sessionId: stale, createdAt: minutesBefore(39), lastActivityAt: STALE });
    const live = await seedSession(t.pool, { createdAt: minutesBefore(40), lastActivityAt: LIVE });
    const hanging = await seedView(t.pool, { sessionId: live, createdAt: minutesBefore(39), lastActivityAt: STALE });
    // Both sessions are linked only after their views were opened.
    await t.pool.query(`update user_activity.sessions set user_id = $1`, [userId]);

    await closer().runOnce(closerContext(clock, captureLog().log));

    const views = await outboxEvents(t.pool, 'PropertyObjectViewEndedKafkaEvent');
    assert.deepEqual(views.map((e) => e.aggregate_id).sort(), [viewOfStale, hanging].sort());
    for (const e of views) assert.equal(e.payload.UserId, userId);
    const [sessionEnded] = await outboxEvents(t.pool, 'SessionEndedKafkaEvent');
    assert.equal(sessionEnded!.payload.UserId, userId);
  });

  test('Cancellation: a stop requested mid-transaction lets it commit whole, then the run stops between batches', async () => {
    await seedStaleSessions(t.pool, 6, 2, STALE);
    const first = (
      await t.pool.query<{ id: string }>(
        `select v.id from user_activity.property_object_views v join user_activity.sessions s on s.id = v.session_id
          order by s.last_activity_at limit 1`,
      )
    ).rows[0]!.id;
    const blocker = await holdViewLocks(t.pool, [first]); // parks the first batch inside its transaction
    const stop = new AbortController();
    const run = closer({ USER_ACTIVITY_CLOSER_BATCH_SIZE: 2 }).runOnce(closerContext(clock, captureLog().log, stop.signal));
    await waitForLockWaiters(t.pool, 1);

    stop.abort(new Error('SIGTERM'));
    await blocker.release();
    const counts = await run;

    assert.equal(counts.closedSessions, 2, 'the batch in flight committed');
    assert.equal(counts.closedViews, 4);
    assert.equal(counts.backlogRemaining, 4 + 8, 'the rest is left Active for the next tick');
    const inconsistent = await countWhere(
      t.pool,
      `select count(*) as n from user_activity.sessions s join user_activity.property_object_views v on v.session_id = s.id
        where s.status <> v.status`,
    );
    assert.equal(inconsistent, 0, 'no session is half closed');
    assert.equal((await outboxEvents(t.pool)).length, 2 + 4, 'events of exactly the committed rows');
  });

  test('Partial failure: one session failing to commit does not roll back its neighbours and stays Active', async () => {
    const ids = [];
    for (let i = 0; i < 5; i += 1) {
      const { sessionId } = await staleSessionWithViews();
      ids.push(sessionId);
    }
    const broken = ids[2]!;
    await failures.failOn(broken);
    const registry = new Registry();
    const { log, lines, raw } = captureLog();

    const counts = await closer({ USER_ACTIVITY_CLOSER_BATCH_SIZE: 10 }, registry).runOnce(closerContext(clock, log));

    assert.deepEqual(counts, { batches: 1, claimed: 5, failed: 1, released: 0, closedSessions: 4, closedViews: 8, backlogRemaining: 3 });
    assert.equal((await sessionRow(t.pool, broken)).status, 'Active');
    assert.equal(
      await countWhere(t.pool, `select count(*) as n from user_activity.property_object_views where session_id = $1 and status = 'Active'`, [broken]),
      2,
      'its views roll back with it',
    );
    for (const id of ids.filter((x) => x !== broken)) assert.equal((await sessionRow(t.pool, id)).status, 'Inactive');
    assert.equal((await outboxEvents(t.pool)).filter((e) => e.payload.SessionId === broken).length, 0);
    assert.equal(await metricValue(registry, 'activity_closer_errors_total'), 1);
    const failed = lines.find((l) => l.msg === 'item failed');
    assert.equal(failed?.id, broken);
    assert.equal(failed?.type, 'Session');
    assert.match(JSON.stringify(failed?.err), /injected close failure/);
    assert.doesNotMatch(raw.join(''), /anon-|203\.0\.113\.7|Mozilla/, 'no AnonymousId, IP or user agent in logs');

    // The next tick retries it and, once the fault is gone, closes it.
    await failures.clear();
    clock.advance(MIN);
    const next = await closer().runOnce(closerContext(clock, captureLog().log));
    assert.deepEqual(next, { batches: 1, claimed: 1, failed: 0, released: 0, closedSessions: 1, closedViews: 2, backlogRemaining: 0 });
  });

  test('Partial failure in phase A: one hanging view failing leaves the rest of its batch closed', async () => {
    const live = await seedSession(t.pool, { createdAt: minutesBefore(60), lastActivityAt: LIVE });
    const views = [];
    for (let i = 0; i < 4; i += 1) views.push(await seedView(t.pool, { sessionId: live, createdAt: minutesBefore(60), lastActivityAt: minutesBefore(20 + i) }));
    await failures.failOn(views[1]!);

    const counts = await closer().runOnce(closerContext(clock, captureLog().log));

    assert.deepEqual(counts, { batches: 1, claimed: 4, failed: 1, released: 0, closedSessions: 0, closedViews: 3, backlogRemaining: 1 });
    assert.equal((await viewRow(t.pool, views[1]!)).status, 'Active');
    assert.equal((await outboxEvents(t.pool)).length, 3);
  });
});
