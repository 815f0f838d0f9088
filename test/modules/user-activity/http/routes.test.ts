import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../../support/app.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import userActivity from '../../../../src/modules/user-activity/index.ts';
import { createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../../src/modules/user-activity/closer/activity-closer.ts';
import { captureLog, clearActivity, closerContext, countWhere, MIN, outboxEvents, sessionRow, T0, viewRow } from '../support.ts';

const clock = new ManualClock(T0);
const { app, database, token } = await buildTestApp({}, { modules: [userActivity], clock });
const pool = database.pool;
const closer = createActivityCloser({ pool, registry: new Registry(), settings: DEFAULT_CLOSER_SETTINGS });
const runCloser = () => closer.runOnce(closerContext(clock, captureLog().log));

beforeEach(async () => {
  await clearActivity(pool);
  clock.set(T0);
});

interface SessionBody {
  id: string;
  anonymousId: string;
  userId: string | null;
  status: string;
  lastActivityAt: string;
  endReason: string | null;
}

async function start(anonymousId = `anon-${newId()}`, device: Record<string, string> = { userAgent: 'Mozilla/5.0', ipAddress: '192.0.2.10' }) {
  const res = await app.inject({ method: 'POST', url: '/api/user-activity/sessions', payload: { anonymousId, device } });
  return { res, body: res.json() as SessionBody };
}

const heartbeat = (id: string) => app.inject({ method: 'PUT', url: `/api/user-activity/sessions/${id}/heartbeat` });
const link = async (id: string, userId?: string) =>
  app.inject({
    method: 'POST',
    url: `/api/user-activity/sessions/${id}/link`,
    headers: userId ? { authorization: `Bearer ${await token({ userId })}` } : {},
  });
const openView = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/user-activity/property-object-views', payload });
const viewHeartbeat = (id: string) => app.inject({ method: 'PUT', url: `/api/user-activity/property-object-views/${id}/heartbeat` });

describe('sessions', () => {
  test('start: 201 with an Active guest session; device data is stored but never echoed', async () => {
    const { res, body } = await start('anon-a');
    assert.equal(res.statusCode, 201);
    assert.equal(body.status, 'Active');
    assert.equal(body.anonymousId, 'anon-a');
    assert.equal(body.userId, null);
    assert.equal(body.lastActivityAt, T0.toISOString());
    assert.doesNotMatch(res.body, /192\.0\.2\.10|Mozilla/);
    const { rows } = await pool.query(`select device_user_agent, host(device_ip_address) as ip from user_activity.sessions where id = $1`, [body.id]);
    assert.deepEqual(rows[0], { device_user_agent: 'Mozilla/5.0', ip: '192.0.2.10' });
  });

  test('one Active session per device: a second start resumes it (200), concurrent starts converge on one', async () => {
    const first = await start('anon-b');
    clock.advance(MIN);
    const again = await start('anon-b');
    assert.equal(again.res.statusCode, 200);
    assert.equal(again.body.id, first.body.id);
    assert.equal(again.body.lastActivityAt, clock.now().toISOString());

    const racing = await Promise.all(Array.from({ length: 5 }, () => start('anon-c')));
    assert.equal(new Set(racing.map((r) => r.body.id)).size, 1);
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.sessions where anonymous_id = 'anon-c'`), 1);
  });

  test('start on a device whose session is already idle past the threshold closes it (with its event) and starts a new one', async () => {
    const old = await start('anon-d');
    clock.advance(13 * MIN);
    const fresh = await start('anon-d');
    assert.equal(fresh.res.statusCode, 201);
    assert.notEqual(fresh.body.id, old.body.id);
    assert.equal((await sessionRow(pool, old.body.id)).status, 'Inactive');
    assert.deepEqual((await outboxEvents(pool, 'SessionEndedKafkaEvent')).map((e) => e.aggregate_id), [old.body.id]);
  });

  test('the device IP defaults to the request address; bad input is refused before the database', async () => {
    const { body } = await start('anon-e', {});
    const { rows } = await pool.query(`select host(device_ip_address) as ip from user_activity.sessions where id = $1`, [body.id]);
    assert.equal(rows[0].ip, '127.0.0.1');
    for (const payload of [
      { anonymousId: '', device: {} },
      { anonymousId: 'has space', device: {} },
      { anonymousId: 'x', device: { ipAddress: 'not-an-ip' } },
      { anonymousId: 'x' },
    ]) {
      const res = await app.inject({ method: 'POST', url: '/api/user-activity/sessions', payload });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(res.json().code, 'VALIDATION_FAILED');
    }
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.sessions`), 1);
  });

  test('heartbeat moves LastActivityAt of an Active session', async () => {
    const { body } = await start();
    clock.advance(5 * MIN);
    const res = await heartbeat(body.id);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().restarted, false);
    assert.equal(res.json().session.id, body.id);
    assert.deepEqual((await sessionRow(pool, body.id)).last_activity_at, clock.now());
  });

  test('heartbeat on a session the closer ended starts a new one for the same device and user (INV-SES-003)', async () => {
    const { body } = await start('anon-f');
    const userId = newId();
    await link(body.id, userId);
    clock.advance(13 * MIN);
    await runCloser();

    const res = await heartbeat(body.id);

    assert.equal(res.statusCode, 200);
    const reply = res.json() as { restarted: boolean; session: SessionBody };
    assert.equal(reply.restarted, true);
    assert.notEqual(reply.session.id, body.id);
    assert.equal(reply.session.anonymousId, 'anon-f');
    assert.equal(reply.session.userId, userId);
    assert.equal(reply.session.lastActivityAt, clock.now().toISOString());
    assert.equal((await sessionRow(pool, body.id)).status, 'Inactive', 'the ended session is not revived');
  });

  test('heartbeat on an unknown session → 404 USER_ACTIVITY_SESSION_NOT_FOUND; a malformed id → 400', async () => {
    const res = await heartbeat(newId());
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'USER_ACTIVITY_SESSION_NOT_FOUND');
    assert.equal((await heartbeat('nope')).statusCode, 400);
  });
});

describe('link', () => {
  test('needs a user token', async () => {
    const { body } = await start();
    const res = await link(body.id);
    assert.equal(res.statusCode, 401);
  });

  test('a guest session takes the user; linking again as the same user changes nothing', async () => {
    const { body } = await start();
    const userId = newId();
    const res = await link(body.id, userId);
    assert.equal(res.statusCode, 200);
    assert.deepEqual([res.json().switched, res.json().session.id, res.json().session.userId], [false, body.id, userId]);
    const again = await link(body.id, userId);
    assert.deepEqual([again.json().switched, again.json().session.id], [false, body.id]);
    assert.deepEqual(await outboxEvents(pool), []);
  });

  test('a session of another user is closed as Switched with its events, and a new one starts for this user', async () => {
    const { body } = await start('anon-g');
    const [alice, bob] = [newId(), newId()];
    await link(body.id, alice);
    const view = (await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Catalog' })).json() as { id: string };
    clock.advance(MIN);

    const res = await link(body.id, bob);

    assert.equal(res.statusCode, 200);
    const reply = res.json() as { switched: boolean; session: SessionBody };
    assert.equal(reply.switched, true);
    assert.notEqual(reply.session.id, body.id);
    assert.equal(reply.session.userId, bob);
    assert.equal(reply.session.anonymousId, 'anon-g');
    const old = await sessionRow(pool, body.id);
    assert.deepEqual([old.status, old.end_reason, old.duration_seconds], ['Inactive', 'Switched', 0]);
    assert.equal((await viewRow(pool, view.id)).status, 'Inactive', 'an Inactive session keeps no Active view');
    const events = await outboxEvents(pool);
    assert.deepEqual(events.map((e) => [e.event_type, e.aggregate_id]).sort(), [
      ['PropertyObjectViewEndedKafkaEvent', view.id],
      ['SessionEndedKafkaEvent', body.id],
    ]);
    assert.equal(events.find((e) => e.event_type === 'SessionEndedKafkaEvent')!.payload.UserId, alice);
  });

  test('no Active session → 404 USER_ACTIVITY_SESSION_NOT_FOUND', async () => {
    const { body } = await start();
    clock.advance(13 * MIN);
    await runCloser();
    const res = await link(body.id, newId());
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'USER_ACTIVITY_SESSION_NOT_FOUND');
    assert.equal((await link(newId(), newId())).statusCode, 404);
  });
});

describe('property-object views', () => {
  test('open: 201 with an Active view; opening counts as session activity', async () => {
    const { body } = await start();
    clock.advance(2 * MIN);
    const propertyObjectId = newId();
    const res = await openView({ sessionId: body.id, propertyObjectId, viewSource: 'Map', filterSnapshot: { rooms: [2, 3], priceMax: 9000000 } });
    assert.equal(res.statusCode, 201);
    const view = res.json();
    assert.equal(view.status, 'Active');
    assert.equal(view.propertyObjectId, propertyObjectId);
    assert.deepEqual(view.filterSnapshot, { rooms: [2, 3], priceMax: 9000000 });
    assert.deepEqual((await sessionRow(pool, body.id)).last_activity_at, clock.now());
  });

  test('open in an unknown or ended session → 404; bad input → 400 and nothing stored', async () => {
    const { body } = await start();
    assert.equal((await openView({ sessionId: newId(), propertyObjectId: newId(), viewSource: 'Map' })).json().code, 'USER_ACTIVITY_SESSION_NOT_FOUND');
    const tooBig = await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map', filterSnapshot: { q: 'x'.repeat(9000) } });
    assert.equal(tooBig.statusCode, 400);
    assert.equal(tooBig.json().code, 'USER_ACTIVITY_FILTER_SNAPSHOT_TOO_LARGE');
    assert.equal((await openView({ sessionId: body.id, propertyObjectId: 'x', viewSource: 'Map' })).statusCode, 400);
    assert.equal((await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: '' })).statusCode, 400);
    clock.advance(13 * MIN);
    await runCloser();
    assert.equal((await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map' })).statusCode, 404);
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.property_object_views`), 0);
  });

  test('heartbeat: accepted and counted as activity of the view and of its session', async () => {
    const { body } = await start();
    const view = (await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map' })).json() as { id: string };
    clock.advance(3 * MIN);
    const res = await viewHeartbeat(view.id);
    assert.deepEqual(res.json(), { accepted: true });
    assert.deepEqual((await viewRow(pool, view.id)).last_activity_at, clock.now());
    assert.deepEqual((await sessionRow(pool, body.id)).last_activity_at, clock.now());
  });

  test('heartbeat on an Inactive view → accepted: false (INV-LV-003); unknown view → 404', async () => {
    const { body } = await start();
    const view = (await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map' })).json() as { id: string };
    // The session stays live through heartbeats while the view hangs; the closer ends only the view.
    for (let i = 0; i < 13; i += 1) {
      clock.advance(MIN);
      await heartbeat(body.id);
    }
    await runCloser();
    assert.equal((await viewRow(pool, view.id)).status, 'Inactive');

    assert.deepEqual((await viewHeartbeat(view.id)).json(), { accepted: false });
    assert.equal((await viewRow(pool, view.id)).status, 'Inactive');
    const unknown = await viewHeartbeat(newId());
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().code, 'USER_ACTIVITY_PROPERTY_OBJECT_VIEW_NOT_FOUND');
  });
});

test('stats of a property object nobody viewed are zero', async () => {
  const id = newId();
  const res = await app.inject({ method: 'GET', url: `/api/user-activity/property-objects/${id}/stats` });
  assert.deepEqual(res.json(), { propertyObjectId: id, viewsCount: 0, totalDurationSeconds: 0 });
});

test('every route is in the OpenAPI document', async () => {
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, unknown> };
  for (const path of [
    '/api/user-activity/sessions',
    '/api/user-activity/sessions/{id}/heartbeat',
    '/api/user-activity/sessions/{id}/link',
    '/api/user-activity/property-object-views',
    '/api/user-activity/property-object-views/{id}/heartbeat',
    '/api/user-activity/property-objects/{id}/stats',
  ]) {
    assert.ok(doc.paths[path], path);
  }
});
