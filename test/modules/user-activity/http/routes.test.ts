import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { buildTestApp } from '../../../support/app.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import userActivity from '../../../../src/modules/user-activity/index.ts';
import { MAX_VIEWS_PER_SESSION } from '../../../../src/modules/user-activity/views/views.ts';
import { createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../../src/modules/user-activity/closer/activity-closer.ts';
import { captureLog, clearActivity, closerContext, countWhere, MIN, outboxEvents, seedSession, sessionRow, T0, viewRow } from '../support.ts';

const clock = new ManualClock(T0);
const { app, database, token } = await buildTestApp({}, { modules: [userActivity], clock });
const pool = database.pool;
const closer = createActivityCloser({ db: database.db, registry: new Registry(), settings: DEFAULT_CLOSER_SETTINGS });
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

interface StartBody extends SessionBody {
  deviceSecret: string;
}

/** A device id of the accepted shape (at least 16 characters). */
const dev = (name: string) => `device-${name}-0123456789`;

/** The X-Device-Secret header (none when `secret` is undefined). */
const withSecret = (secret: string | undefined): Record<string, string> => (secret === undefined ? {} : { 'x-device-secret': secret });

async function start(
  anonymousId = `anon-${newId()}`,
  device: Record<string, string> = { userAgent: 'Mozilla/5.0', ipAddress: '192.0.2.10' },
  secret?: string,
) {
  const res = await app.inject({ method: 'POST', url: '/api/user-activity/sessions', headers: withSecret(secret), payload: { anonymousId, device } });
  return { res, body: res.json() as StartBody };
}

const heartbeat = (id: string, secret?: string) =>
  app.inject({ method: 'PUT', url: `/api/user-activity/sessions/${id}/heartbeat`, headers: withSecret(secret) });
const link = async (id: string, userId?: string, secret?: string) =>
  app.inject({
    method: 'POST',
    url: `/api/user-activity/sessions/${id}/link`,
    headers: { ...(userId ? { authorization: `Bearer ${await token({ userId })}` } : {}), ...withSecret(secret) },
  });
const openView = (payload: Record<string, unknown>, secret?: string) =>
  app.inject({ method: 'POST', url: '/api/user-activity/property-object-views', headers: withSecret(secret), payload });
const viewHeartbeat = (id: string, secret?: string) =>
  app.inject({ method: 'PUT', url: `/api/user-activity/property-object-views/${id}/heartbeat`, headers: withSecret(secret) });

describe('sessions', () => {
  test('start: 201 with an Active guest session; device data is stored but never echoed, the body ipAddress ignored', async () => {
    const { res, body } = await start(dev('a'));
    assert.equal(res.statusCode, 201);
    assert.equal(body.status, 'Active');
    assert.equal(body.anonymousId, dev('a'));
    assert.equal(body.userId, null);
    assert.equal(body.lastActivityAt, T0.toISOString());
    assert.doesNotMatch(res.body, /192\.0\.2\.10|Mozilla/);
    const { rows } = await pool.query(`select device_user_agent, host(device_ip_address) as ip from user_activity.sessions where id = $1`, [body.id]);
    // The body said 192.0.2.10; the stored address is the connection's (inject: 127.0.0.1).
    assert.deepEqual(rows[0], { device_user_agent: 'Mozilla/5.0', ip: '127.0.0.1' });
  });

  test('one Active session per device: a second start resumes it (200), concurrent starts converge on one', async () => {
    const first = await start(dev('b'));
    clock.advance(MIN);
    const again = await start(dev('b'), undefined, first.body.deviceSecret);
    assert.equal(again.res.statusCode, 200);
    assert.equal(again.body.id, first.body.id);
    assert.equal(again.body.lastActivityAt, clock.now().toISOString());
    assert.equal(again.body.deviceSecret, first.body.deviceSecret, 'a resumed session keeps its secret');

    // Concurrent starts of one device (proving it with its secret) converge on its one session.
    const c = await start(dev('c'));
    const racing = await Promise.all(Array.from({ length: 5 }, () => start(dev('c'), undefined, c.body.deviceSecret)));
    assert.equal(new Set(racing.map((r) => r.body.id)).size, 1);
    assert.equal(racing[0]!.body.id, c.body.id);
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.sessions where anonymous_id = $1`, [dev('c')]), 1);
  });

  test('start on a device whose session is already idle past the threshold closes it (with its event) and starts a new one', async () => {
    const old = await start(dev('d'));
    clock.advance(13 * MIN);
    const fresh = await start(dev('d'), undefined, old.body.deviceSecret);
    assert.equal(fresh.res.statusCode, 201);
    assert.notEqual(fresh.body.id, old.body.id);
    assert.equal((await sessionRow(pool, old.body.id)).status, 'Inactive');
    assert.deepEqual((await outboxEvents(pool, 'SessionEndedKafkaEvent')).map((e) => e.aggregate_id), [old.body.id]);
  });

  test('the device IP defaults to the request address; bad input is refused before the database', async () => {
    const { body } = await start(dev('e'), {});
    const { rows } = await pool.query(`select host(device_ip_address) as ip from user_activity.sessions where id = $1`, [body.id]);
    assert.equal(rows[0].ip, '127.0.0.1');
    for (const payload of [
      { anonymousId: '', device: {} },
      { anonymousId: 'has space 0123456789', device: {} },
      { anonymousId: dev('x'), device: { ipAddress: 'not-an-ip' } },
      { anonymousId: dev('x') },
      { anonymousId: 'x'.repeat(101), device: {} },
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
    const res = await heartbeat(body.id, body.deviceSecret);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().restarted, false);
    assert.equal(res.json().session.id, body.id);
    assert.deepEqual((await sessionRow(pool, body.id)).last_activity_at, clock.now());
  });

  test('heartbeat on a session the closer ended starts a new one for the same device and user (INV-SES-003)', async () => {
    const { body } = await start(dev('f'));
    const userId = newId();
    await link(body.id, userId, body.deviceSecret);
    clock.advance(13 * MIN);
    await runCloser();

    const res = await heartbeat(body.id, body.deviceSecret);

    assert.equal(res.statusCode, 200);
    const reply = res.json() as { restarted: boolean; session: SessionBody };
    assert.equal(reply.restarted, true);
    assert.notEqual(reply.session.id, body.id);
    assert.equal(reply.session.anonymousId, dev('f'));
    assert.equal(reply.session.userId, userId);
    assert.equal(reply.session.lastActivityAt, clock.now().toISOString());
    assert.equal((await sessionRow(pool, body.id)).status, 'Inactive', 'the ended session is not revived');
  });

  test('heartbeat on an unknown session → 404 USER_ACTIVITY_SESSION_NOT_FOUND; a malformed id → 400', async () => {
    const res = await heartbeat(newId(), 'some-secret');
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'USER_ACTIVITY_SESSION_NOT_FOUND');
    assert.equal((await heartbeat('nope', 'some-secret')).statusCode, 400);
  });
});

describe('link', () => {
  test('needs a user token', async () => {
    const { body } = await start();
    const res = await link(body.id, undefined, body.deviceSecret);
    assert.equal(res.statusCode, 401);
  });

  test('a guest session takes the user; linking again as the same user changes nothing', async () => {
    const { body } = await start();
    const userId = newId();
    const res = await link(body.id, userId, body.deviceSecret);
    assert.equal(res.statusCode, 200);
    assert.deepEqual([res.json().switched, res.json().session.id, res.json().session.userId], [false, body.id, userId]);
    const again = await link(body.id, userId, body.deviceSecret);
    assert.deepEqual([again.json().switched, again.json().session.id], [false, body.id]);
    assert.deepEqual(await outboxEvents(pool), []);
  });

  test('a session of another user is closed as Switched with its events, and a new one starts for this user', async () => {
    const { body } = await start(dev('g'));
    const [alice, bob] = [newId(), newId()];
    await link(body.id, alice, body.deviceSecret);
    const view = (await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Catalog' }, body.deviceSecret)).json() as { id: string };
    clock.advance(MIN);

    const res = await link(body.id, bob, body.deviceSecret);

    assert.equal(res.statusCode, 200);
    const reply = res.json() as { switched: boolean; session: SessionBody };
    assert.equal(reply.switched, true);
    assert.notEqual(reply.session.id, body.id);
    assert.equal(reply.session.userId, bob);
    assert.equal(reply.session.anonymousId, dev('g'));
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
    const res = await link(body.id, newId(), body.deviceSecret);
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'USER_ACTIVITY_SESSION_NOT_FOUND');
    assert.equal((await link(newId(), newId(), body.deviceSecret)).statusCode, 404);
  });
});

describe('property-object views', () => {
  test('open: 201 with an Active view; opening counts as session activity', async () => {
    const { body } = await start();
    clock.advance(2 * MIN);
    const propertyObjectId = newId();
    const res = await openView(
      { sessionId: body.id, propertyObjectId, viewSource: 'Map', filterSnapshot: { rooms: [2, 3], priceMax: 9000000 } },
      body.deviceSecret,
    );
    assert.equal(res.statusCode, 201);
    const view = res.json();
    assert.equal(view.status, 'Active');
    assert.equal(view.propertyObjectId, propertyObjectId);
    assert.deepEqual(view.filterSnapshot, { rooms: [2, 3], priceMax: 9000000 });
    assert.deepEqual((await sessionRow(pool, body.id)).last_activity_at, clock.now());
  });

  test('a session holds at most MAX_VIEWS_PER_SESSION views: past it 409 USER_ACTIVITY_SESSION_VIEW_LIMIT_REACHED, nothing stored, racing opens included', async () => {
    const { body } = await start();
    // Up to two below the cap, written directly (the cap is about the count, not how the rows came).
    await pool.query(
      `insert into user_activity.property_object_views (id, session_id, property_object_id, view_source, status, created_at, last_activity_at)
       select gen_random_uuid(), $1, gen_random_uuid(), 'Catalog', 'Active', $2, $2 from generate_series(1, $3)`,
      [body.id, clock.now(), MAX_VIEWS_PER_SESSION - 2],
    );
    clock.advance(MIN);
    const racing = await Promise.all(Array.from({ length: 4 }, () => openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map' }, body.deviceSecret)));
    assert.deepEqual(racing.map((r) => r.statusCode).sort(), [201, 201, 409, 409]);
    const refused = racing.find((r) => r.statusCode === 409)!.json();
    assert.equal(refused.code, 'USER_ACTIVITY_SESSION_VIEW_LIMIT_REACHED');
    assert.equal(typeof refused.message, 'string');
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.property_object_views where session_id = $1`, [body.id]), MAX_VIEWS_PER_SESSION);

    clock.advance(MIN);
    const before = (await sessionRow(pool, body.id)).last_activity_at;
    const full = await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map' }, body.deviceSecret);
    assert.equal(full.statusCode, 409);
    assert.deepEqual((await sessionRow(pool, body.id)).last_activity_at, before, 'a refused open is no activity either');
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.property_object_views where session_id = $1`, [body.id]), MAX_VIEWS_PER_SESSION);
    // A new session of the device may open views again.
    const next = await start();
    assert.equal((await openView({ sessionId: next.body.id, propertyObjectId: newId(), viewSource: 'Map' }, next.body.deviceSecret)).statusCode, 201);
  });

  test('open in an unknown or ended session → 404; bad input → 400 and nothing stored', async () => {
    const { body } = await start();
    const secret = body.deviceSecret;
    assert.equal((await openView({ sessionId: newId(), propertyObjectId: newId(), viewSource: 'Map' }, secret)).json().code, 'USER_ACTIVITY_SESSION_NOT_FOUND');
    const tooBig = await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map', filterSnapshot: { q: 'x'.repeat(9000) } }, secret);
    assert.equal(tooBig.statusCode, 400);
    assert.equal(tooBig.json().code, 'USER_ACTIVITY_FILTER_SNAPSHOT_TOO_LARGE');
    assert.equal((await openView({ sessionId: body.id, propertyObjectId: 'x', viewSource: 'Map' }, secret)).statusCode, 400);
    assert.equal((await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: '' }, secret)).statusCode, 400);
    clock.advance(13 * MIN);
    await runCloser();
    assert.equal((await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map' }, secret)).statusCode, 404);
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.property_object_views`), 0);
  });

  test('heartbeat: accepted and counted as activity of the view and of its session', async () => {
    const { body } = await start();
    const view = (await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map' }, body.deviceSecret)).json() as { id: string };
    clock.advance(3 * MIN);
    const res = await viewHeartbeat(view.id, body.deviceSecret);
    assert.deepEqual(res.json(), { accepted: true });
    assert.deepEqual((await viewRow(pool, view.id)).last_activity_at, clock.now());
    assert.deepEqual((await sessionRow(pool, body.id)).last_activity_at, clock.now());
  });

  test('heartbeat on an Inactive view → accepted: false (INV-LV-003); unknown view → 404', async () => {
    const { body } = await start();
    const view = (await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map' }, body.deviceSecret)).json() as { id: string };
    // The session stays live through heartbeats while the view hangs; the closer ends only the view.
    for (let i = 0; i < 13; i += 1) {
      clock.advance(MIN);
      await heartbeat(body.id, body.deviceSecret);
    }
    await runCloser();
    assert.equal((await viewRow(pool, view.id)).status, 'Inactive');

    assert.deepEqual((await viewHeartbeat(view.id, body.deviceSecret)).json(), { accepted: false });
    assert.equal((await viewRow(pool, view.id)).status, 'Inactive');
    const unknown = await viewHeartbeat(newId(), body.deviceSecret);
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().code, 'USER_ACTIVITY_PROPERTY_OBJECT_VIEW_NOT_FOUND');
  });
});

describe('device secret: unauthenticated tracking is not an oracle', () => {
  /** Everything stored about sessions and views, to prove a refused call changed nothing. */
  const snapshot = async () =>
    (
      await pool.query(
        `select (select coalesce(json_agg(s order by s.id), '[]') from user_activity.sessions s) as sessions,
                (select coalesce(json_agg(v order by v.id), '[]') from user_activity.property_object_views v) as views,
                (select count(*) from platform.outbox) as events`,
      )
    ).rows[0];

  /** A victim device with a signed-in session and an open view. */
  async function victim() {
    const { body } = await start(dev('victim'));
    const userId = newId();
    assert.equal((await link(body.id, userId, body.deviceSecret)).statusCode, 200);
    const view = (await openView({ sessionId: body.id, propertyObjectId: newId(), viewSource: 'Map' }, body.deviceSecret)).json() as { id: string };
    clock.advance(MIN);
    return { session: body, userId, viewId: view.id };
  }

  test("start with someone else's anonymousId yields a session of the caller's own: neither their session id nor their userId", async () => {
    const v = await victim();
    for (const secret of [undefined, 'guessed-secret', v.session.deviceSecret.replace(/^./, (ch) => (ch === 'A' ? 'B' : 'A'))]) {
      const attacker = await start(dev('victim'), {}, secret);
      assert.equal(attacker.res.statusCode, 201, 'a new session, not a resumed one');
      assert.notEqual(attacker.body.id, v.session.id);
      assert.equal(attacker.body.userId, null);
      assert.notEqual(attacker.body.deviceSecret, v.session.deviceSecret);
      assert.doesNotMatch(attacker.res.body, new RegExp(`${v.session.id}|${v.userId}|${v.session.deviceSecret}`));
    }
    // The victim's session was not touched, and its owner still resumes it.
    const stored = await sessionRow(pool, v.session.id);
    assert.deepEqual([stored.status, stored.last_activity_at], ['Active', T0]);
    const resumed = await start(dev('victim'), {}, v.session.deviceSecret);
    assert.deepEqual([resumed.res.statusCode, resumed.body.id, resumed.body.userId], [200, v.session.id, v.userId]);
  });

  test('anonymousId needs 16 characters: 15 → 400 VALIDATION_FAILED and nothing stored; 16 → 201', async () => {
    const short = await start('a'.repeat(15));
    assert.equal(short.res.statusCode, 400);
    assert.equal(short.res.json().code, 'VALIDATION_FAILED');
    assert.equal(typeof short.res.json().message, 'string');
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.sessions`), 0);
    assert.equal((await start('a'.repeat(16))).res.statusCode, 201);
  });

  test('the secret is 32 random bytes (base64url), stored only as its SHA-256', async () => {
    const { body } = await start();
    assert.match(body.deviceSecret, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(body.deviceSecret, 'base64url').length, 32);
    const { rows } = await pool.query(`select row_to_json(s)::text as row, device_secret_hash from user_activity.sessions s where id = $1`, [body.id]);
    assert.equal(rows[0].device_secret_hash, createHash('sha256').update(body.deviceSecret).digest('hex'));
    assert.ok(!rows[0].row.includes(body.deviceSecret), 'the secret itself is not stored');
    assert.notEqual((await start()).body.deviceSecret, body.deviceSecret);
  });

  test('session heartbeat without the secret → 401, with a wrong one → 403, nothing changes; with the right one it works', async () => {
    const v = await victim();
    const before = await snapshot();
    const missing = await heartbeat(v.session.id);
    assert.deepEqual([missing.statusCode, missing.json().code], [401, 'USER_ACTIVITY_DEVICE_SECRET_REQUIRED']);
    assert.equal(typeof missing.json().message, 'string');
    const wrong = await heartbeat(v.session.id, 'not-the-secret');
    assert.deepEqual([wrong.statusCode, wrong.json().code], [403, 'USER_ACTIVITY_DEVICE_SECRET_INVALID']);
    assert.doesNotMatch(wrong.body, new RegExp(v.userId));
    assert.deepEqual(await snapshot(), before);

    // An ended session is not restarted (with its user) for someone without its secret either.
    clock.advance(13 * MIN);
    await runCloser();
    const ended = await snapshot();
    assert.equal((await heartbeat(v.session.id, 'not-the-secret')).statusCode, 403);
    assert.deepEqual(await snapshot(), ended);

    const ok = await heartbeat(v.session.id, v.session.deviceSecret);
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().restarted, true);
    assert.equal(ok.json().session.userId, v.userId);
    // The restarted session is the same device: the same secret keeps working on it.
    assert.equal((await heartbeat(ok.json().session.id, v.session.deviceSecret)).json().restarted, false);
  });

  test('link without the secret → 401, with a wrong one → 403, nothing changes; with the right one it links', async () => {
    const { body } = await start(dev('guest'));
    const mallory = newId();
    const before = await snapshot();
    const missing = await link(body.id, mallory);
    assert.deepEqual([missing.statusCode, missing.json().code], [401, 'USER_ACTIVITY_DEVICE_SECRET_REQUIRED']);
    const wrong = await link(body.id, mallory, 'not-the-secret');
    assert.deepEqual([wrong.statusCode, wrong.json().code], [403, 'USER_ACTIVITY_DEVICE_SECRET_INVALID']);
    assert.deepEqual(await snapshot(), before);
    assert.equal((await sessionRow(pool, body.id) as unknown as { user_id: string | null }).user_id, null);

    const userId = newId();
    const ok = await link(body.id, userId, body.deviceSecret);
    assert.equal(ok.statusCode, 200);
    assert.deepEqual([ok.json().switched, ok.json().session.userId], [false, userId]);
  });

  test('a switched session keeps the device secret; the old secret proves nothing for another device', async () => {
    const v = await victim();
    const switched = await link(v.session.id, newId(), v.session.deviceSecret);
    assert.equal(switched.json().switched, true);
    assert.equal((await heartbeat(switched.json().session.id, v.session.deviceSecret)).statusCode, 200);
    const other = await start(dev('other'));
    assert.equal((await heartbeat(other.body.id, v.session.deviceSecret)).statusCode, 403);
  });

  test('open view and view heartbeat without / with a wrong secret are refused and store nothing; with the right one they work', async () => {
    const v = await victim();
    const before = await snapshot();
    const payload = { sessionId: v.session.id, propertyObjectId: newId(), viewSource: 'Map' };
    assert.deepEqual([(await openView(payload)).statusCode, (await openView(payload)).json().code], [401, 'USER_ACTIVITY_DEVICE_SECRET_REQUIRED']);
    assert.deepEqual([(await openView(payload, 'nope')).statusCode, (await openView(payload, 'nope')).json().code], [403, 'USER_ACTIVITY_DEVICE_SECRET_INVALID']);
    assert.deepEqual([(await viewHeartbeat(v.viewId)).statusCode, (await viewHeartbeat(v.viewId)).json().code], [401, 'USER_ACTIVITY_DEVICE_SECRET_REQUIRED']);
    assert.deepEqual([(await viewHeartbeat(v.viewId, 'nope')).statusCode, (await viewHeartbeat(v.viewId, 'nope')).json().code], [403, 'USER_ACTIVITY_DEVICE_SECRET_INVALID']);
    assert.deepEqual(await snapshot(), before);

    assert.equal((await openView(payload, v.session.deviceSecret)).statusCode, 201);
    assert.deepEqual((await viewHeartbeat(v.viewId, v.session.deviceSecret)).json(), { accepted: true });
  });

  test('a session from before device secrets (no stored digest) cannot be proven by any secret', async () => {
    const id = await seedSession(pool, { createdAt: T0, lastActivityAt: T0 });
    await pool.query(`update user_activity.sessions set device_secret_hash = null where id = $1`, [id]);
    assert.equal((await heartbeat(id, 'anything')).statusCode, 403);
    assert.equal((await link(id, newId(), 'anything')).statusCode, 403);
    assert.deepEqual((await sessionRow(pool, id)).last_activity_at, T0);
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
