import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../../support/app.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import userActivity from '../../../../src/modules/user-activity/index.ts';
import { createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../../src/modules/user-activity/closer/activity-closer.ts';
import {
  captureLog,
  clearActivity,
  closerContext,
  holdViewLocks,
  minutesBefore,
  outboxEvents,
  SEED_DEVICE_SECRET,
  seedSession,
  seedView,
  sessionRow,
  T0,
  viewRow,
  waitForLockWaiters,
} from '../support.ts';

/**
 * Online writers racing ActivityCloserJob over the same session (seed 001 "Гонка со встречными
 * онлайн-операциями"). Interleavings are forced with a real row lock held by the test: a
 * transaction holding one of the session's views parks whichever side reaches that view first
 * while it holds the session, and pg_stat_activity shows who waits.
 */

const clock = new ManualClock(T0);
const { app, database, token } = await buildTestApp({}, { modules: [userActivity], clock });
const pool = database.pool;
const closer = createActivityCloser({ db: database.db, registry: new Registry(), settings: DEFAULT_CLOSER_SETTINGS });
const runCloser = () => closer.runOnce(closerContext(clock, captureLog().log));

beforeEach(async () => {
  await clearActivity(pool);
  clock.set(T0);
});

/** A session idle for 13 minutes (past the 12-minute threshold) with one open view. */
async function staleSession(userId: string | null = null) {
  const sessionId = await seedSession(pool, { userId, createdAt: minutesBefore(30), lastActivityAt: minutesBefore(13) });
  const viewId = await seedView(pool, { sessionId, createdAt: minutesBefore(30), lastActivityAt: minutesBefore(13) });
  return { sessionId, viewId };
}

/** Seeded sessions carry SEED_DEVICE_SECRET: the device proves itself with it. */
const secret = { 'x-device-secret': SEED_DEVICE_SECRET };

const sessionEndedFor = async (id: string) => (await outboxEvents(pool, 'SessionEndedKafkaEvent')).filter((e) => e.aggregate_id === id);

describe('heartbeat vs closer', () => {
  test('closer first: the heartbeat waits, sees the session ended and restarts — activity lands on a new session, one close', async () => {
    const { sessionId, viewId } = await staleSession();
    const blocker = await holdViewLocks(pool, [viewId]);
    const closing = runCloser(); // locks the session, then waits for the view
    await waitForLockWaiters(pool, 1);
    const beating = app.inject({ method: 'PUT', url: `/api/user-activity/sessions/${sessionId}/heartbeat`, headers: secret });
    await waitForLockWaiters(pool, 2); // the heartbeat is parked behind the closer's session lock

    await blocker.release();
    const [counts, res] = await Promise.all([closing, beating]);

    assert.equal(counts.closedSessions, 1);
    const reply = res.json() as { restarted: boolean; session: { id: string; lastActivityAt: string } };
    assert.equal(reply.restarted, true);
    assert.notEqual(reply.session.id, sessionId);
    assert.equal(reply.session.lastActivityAt, T0.toISOString(), 'the activity is recorded on the new session');
    const old = await sessionRow(pool, sessionId);
    assert.equal(old.status, 'Inactive');
    assert.equal(old.duration_seconds, 17 * 60, 'duration from the state the closer saw, computed once');
    assert.equal((await sessionEndedFor(sessionId)).length, 1);
    assert.equal((await viewRow(pool, viewId)).status, 'Inactive');
  });

  test('heartbeat first: the closer skips the session the heartbeat holds, and then finds it no longer idle — no close at all', async () => {
    const { sessionId, viewId } = await staleSession();
    const blocker = await holdViewLocks(pool, [viewId]);
    // A view heartbeat touches the session first (and keeps it locked), then waits for the view.
    const beating = app.inject({ method: 'PUT', url: `/api/user-activity/property-object-views/${viewId}/heartbeat`, headers: secret });
    await waitForLockWaiters(pool, 1);

    const during = await runCloser();
    await blocker.release();
    const res = await beating;
    const afterwards = await runCloser();

    assert.equal(during.closedSessions! + during.closedViews!, 0, 'SKIP LOCKED: the held session is not closed');
    assert.equal(afterwards.closedSessions! + afterwards.closedViews!, 0, 'the heartbeat moved it past the cutoff');
    assert.deepEqual(res.json(), { accepted: true });
    const s = await sessionRow(pool, sessionId);
    assert.equal(s.status, 'Active');
    assert.deepEqual(s.last_activity_at, T0);
    assert.deepEqual((await viewRow(pool, viewId)).last_activity_at, T0);
    assert.deepEqual(await outboxEvents(pool), []);
  });

  test('a heartbeat committed before the run keeps the session out of it', async () => {
    const { sessionId } = await staleSession();
    const res = await app.inject({ method: 'PUT', url: `/api/user-activity/sessions/${sessionId}/heartbeat`, headers: secret });
    assert.equal(res.json().restarted, false);
    const counts = await runCloser();
    assert.equal(counts.closedSessions, 0);
    assert.equal((await sessionRow(pool, sessionId)).status, 'Active');
  });

  test('a view heartbeat after phase A closed the view: accepted: false, and no second close', async () => {
    const sessionId = await seedSession(pool, { createdAt: minutesBefore(30), lastActivityAt: minutesBefore(1) });
    const viewId = await seedView(pool, { sessionId, createdAt: minutesBefore(30), lastActivityAt: minutesBefore(13) });
    await runCloser();
    const res = await app.inject({ method: 'PUT', url: `/api/user-activity/property-object-views/${viewId}/heartbeat`, headers: secret });
    assert.deepEqual(res.json(), { accepted: false });
    assert.equal((await runCloser()).closedViews, 0);
    assert.equal((await outboxEvents(pool, 'PropertyObjectViewEndedKafkaEvent')).length, 1);
    assert.equal((await sessionRow(pool, sessionId)).status, 'Active');
  });
});

describe('link vs closer', () => {
  const linkAs = async (sessionId: string, userId: string) =>
    app.inject({
      method: 'POST',
      url: `/api/user-activity/sessions/${sessionId}/link`,
      headers: { authorization: `Bearer ${await token({ userId })}`, ...secret },
    });

  test('closer first: link waits, finds no Active session → 404 USER_ACTIVITY_SESSION_NOT_FOUND; one close (Inactivity)', async () => {
    const { sessionId, viewId } = await staleSession(newId());
    const blocker = await holdViewLocks(pool, [viewId]);
    const closing = runCloser();
    await waitForLockWaiters(pool, 1);
    const linking = linkAs(sessionId, newId());
    await waitForLockWaiters(pool, 2);

    await blocker.release();
    const [counts, res] = await Promise.all([closing, linking]);

    assert.equal(counts.closedSessions, 1);
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'USER_ACTIVITY_SESSION_NOT_FOUND');
    assert.equal((await sessionRow(pool, sessionId)).end_reason, 'Inactivity');
    assert.equal((await sessionEndedFor(sessionId)).length, 1);
  });

  test('link first (Switched): the closer skips the session link holds; exactly one close (Switched), one event', async () => {
    const [alice, bob] = [newId(), newId()];
    const { sessionId, viewId } = await staleSession(alice);
    const blocker = await holdViewLocks(pool, [viewId]);
    const linking = linkAs(sessionId, bob); // locks the session, then waits to close its view
    await waitForLockWaiters(pool, 1);

    const during = await runCloser();
    await blocker.release();
    const res = await linking;
    const afterwards = await runCloser();

    assert.equal(during.closedSessions, 0);
    assert.equal(afterwards.closedSessions, 0);
    assert.equal(res.json().switched, true);
    const old = await sessionRow(pool, sessionId);
    assert.deepEqual([old.status, old.end_reason], ['Inactive', 'Switched']);
    assert.equal((await viewRow(pool, viewId)).status, 'Inactive');
    const ended = await sessionEndedFor(sessionId);
    assert.equal(ended.length, 1);
    assert.equal(ended[0]!.payload.UserId, alice);
    assert.equal((await outboxEvents(pool, 'PropertyObjectViewEndedKafkaEvent')).length, 1);
  });
});
