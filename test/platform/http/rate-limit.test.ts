import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { newId } from '../../../src/platform/time.ts';
import { tunedModules } from '../../../src/modules/index.ts';
import { buildTestApp } from '../../support/app.ts';

const sharedRedis = process.env.REDIS_URL;
if (!sharedRedis) throw new Error('REDIS_URL is unset: run the tests with `npm test` (scripts/services.sh starts Redis)');

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A phone nobody has: the search answers 404, and still counts towards the limit. */
const search = (app: FastifyInstance, token: string) =>
  app.inject({ url: '/api/messenger/contacts/search?phone=%2B79990001122', headers: bearer(token) });

test('a per-user limit holds across two replicas on one Redis: 429 RATE_LIMITED with Retry-After, other users unaffected', async () => {
  const env = { REDIS_URL: sharedRedis, MESSENGER_RATE_LIMIT_CONTACT_SEARCHES_PER_MINUTE: '3' };
  const [a, b] = await Promise.all([buildTestApp(env), buildTestApp(env)]);
  const userId = newId();
  const token = await a.token({ userId });
  const statuses = [];
  for (const app of [a.app, b.app, a.app]) statuses.push((await search(app, token)).statusCode);
  assert.deepEqual(statuses, [404, 404, 404]);

  const refused = await search(b.app, token);
  assert.equal(refused.statusCode, 429);
  assert.equal(refused.json().code, 'RATE_LIMITED');
  assert.deepEqual(Object.keys(refused.json()).sort(), ['code', 'message']);
  const retryAfter = Number(refused.headers['retry-after']);
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${refused.headers['retry-after']}`);

  assert.equal((await search(a.app, await a.token())).statusCode, 404, 'another user has a counter of its own');
});

test('every route the limits name is limited per user (limit 1: the second call is 429)', async () => {
  // Two limits are settings; the others are fixed values (each module's defaults.ts), lowered in code.
  const modules = tunedModules({
    messenger: { rateLimitContactRequestsPerMinute: 1, rateLimitCallInvitesPerMinute: 1, rateLimitChatChangesPerMinute: 1 },
    notifications: { rateLimitPushTokenRegistrationsPerMinute: 1 },
  });
  const { app, token } = await buildTestApp(
    { MESSENGER_RATE_LIMIT_CONTACT_SEARCHES_PER_MINUTE: '1', MESSENGER_RATE_LIMIT_MESSAGE_SENDS_PER_MINUTE: '1' },
    { modules },
  );
  const user = await token();
  const calls: [string, string, object?][] = [
    ['GET', '/api/messenger/contacts/search?phone=%2B79990001122'],
    ['POST', '/api/messenger/contacts/requests', { phone: '+79990001122' }],
    ['POST', '/api/messenger/calls', { calleeUserId: newId(), media: 'Audio' }],
    ['POST', `/api/messenger/chats/${newId()}/conferences`, { media: 'Audio' }],
    ['POST', `/api/messenger/conferences/${newId()}/invite`, { userIds: [newId()] }],
    ['POST', `/api/messenger/chats/${newId()}/messages`, { kind: 'Text', body: 'hello' }],
    ['POST', '/api/messenger/chats', { kind: 'Group', title: 'G', memberUserIds: [newId()] }],
    ['POST', `/api/messenger/chats/${newId()}/participants`, { userIds: [newId()] }],
    ['POST', '/api/notifications/push-tokens', { token: `device-${newId()}`, platform: 'android' }],
  ];
  for (const [method, url, payload] of calls) {
    const inject = () => app.inject({ method: method as 'GET', url, headers: bearer(user), ...(payload ? { payload } : {}) });
    const first = await inject();
    assert.notEqual(first.statusCode, 429, `${method} ${url}: first call`);
    const second = await inject();
    assert.equal(second.statusCode, 429, `${method} ${url}: second call`);
    assert.equal(second.json().code, 'RATE_LIMITED');
  }
});

test('tracking routes are limited per client address, in memory without Redis; X-Forwarded-For does not escape it', async () => {
  const { app } = await buildTestApp({}, { modules: tunedModules({ userActivity: { rateLimitTrackingPerMinute: 2 } }) });
  const start = (remoteAddress: string, forwardedFor?: string) =>
    app.inject({
      method: 'POST',
      url: '/api/user-activity/sessions',
      remoteAddress,
      headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
      payload: { anonymousId: `device-${newId()}`, device: {} },
    });
  assert.equal((await start('198.51.100.1')).statusCode, 201);
  assert.equal((await start('198.51.100.1', '203.0.113.1')).statusCode, 201);
  const third = await start('198.51.100.1', '203.0.113.2');
  assert.equal(third.statusCode, 429, 'a client cannot pick another address: no proxy is trusted');
  assert.ok(Number(third.headers['retry-after']) >= 1);
  assert.equal((await start('198.51.100.2')).statusCode, 201, 'another address has its own counter');
});

test('TRUST_PROXY: only the named proxy sets the stored client address, and a forwarded non-address is stored as null (not a 500)', async () => {
  const ipOf = async (app: FastifyInstance, database: { pool: { query: Function } }, headers: Record<string, string>) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/user-activity/sessions',
      remoteAddress: '10.0.0.5',
      headers,
      payload: { anonymousId: `device-${newId()}`, device: {} },
    });
    assert.equal(res.statusCode, 201, res.body);
    const { rows } = await database.pool.query('select host(device_ip_address) as ip from user_activity.sessions where id = $1', [res.json().id]);
    return rows[0].ip as string | null;
  };
  const trusted = await buildTestApp({ TRUST_PROXY: '10.0.0.0/8' });
  assert.equal(await ipOf(trusted.app, trusted.database, { 'x-forwarded-for': '203.0.113.7' }), '203.0.113.7');
  assert.equal(await ipOf(trusted.app, trusted.database, { 'x-forwarded-for': 'not-an-address' }), null);
  const untrusted = await buildTestApp({});
  assert.equal(await ipOf(untrusted.app, untrusted.database, { 'x-forwarded-for': '203.0.113.7' }), '10.0.0.5');
});

test('view opens are limited per client address to a tenth of the tracking limit: 429 RATE_LIMITED with Retry-After, nothing stored', async () => {
  const { app, database } = await buildTestApp({}, { modules: tunedModules({ userActivity: { rateLimitTrackingPerMinute: 20 } }) });
  const start = async (remoteAddress: string) => {
    const res = await app.inject({ method: 'POST', url: '/api/user-activity/sessions', remoteAddress, payload: { anonymousId: `device-${newId()}`, device: {} } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json() as { id: string; deviceSecret: string };
  };
  const open = (remoteAddress: string, session: { id: string; deviceSecret: string }) =>
    app.inject({
      method: 'POST',
      url: '/api/user-activity/property-object-views',
      remoteAddress,
      headers: { 'x-device-secret': session.deviceSecret },
      payload: { sessionId: session.id, propertyObjectId: newId(), viewSource: 'Map', filterSnapshot: { q: 'x'.repeat(8000) } },
    });
  const views = async () => Number((await database.pool.query('select count(*) as n from user_activity.property_object_views')).rows[0].n);

  const one = await start('198.51.100.1');
  const other = await start('198.51.100.1'); // sessions do not multiply the limit: it is the address's
  assert.equal((await open('198.51.100.1', one)).statusCode, 201);
  assert.equal((await open('198.51.100.1', other)).statusCode, 201);
  const third = await open('198.51.100.1', one);
  assert.equal(third.statusCode, 429);
  assert.equal(third.json().code, 'RATE_LIMITED');
  assert.equal(typeof third.json().message, 'string');
  assert.ok(Number(third.headers['retry-after']) >= 1);
  assert.equal(await views(), 2, 'the refused open stored nothing');
  const heartbeat = await app.inject({ method: 'PUT', url: `/api/user-activity/sessions/${one.id}/heartbeat`, remoteAddress: '198.51.100.1', headers: { 'x-device-secret': one.deviceSecret } });
  assert.equal(heartbeat.statusCode, 200, 'heartbeats keep the full tracking limit');
  assert.equal((await open('198.51.100.2', await start('198.51.100.2'))).statusCode, 201, 'another address has its own counter');
});

test('a body ipAddress is ignored: the session stores the connection address, or the trusted proxy\'s X-Forwarded-For', async () => {
  const stored = async (env: Record<string, string>, headers: Record<string, string>) => {
    const { app, database } = await buildTestApp(env);
    const res = await app.inject({
      method: 'POST',
      url: '/api/user-activity/sessions',
      remoteAddress: '10.0.0.5',
      headers,
      payload: { anonymousId: `device-${newId()}`, device: { ipAddress: '192.0.2.99' } },
    });
    assert.equal(res.statusCode, 201, 'the field is still accepted');
    const { rows } = await database.pool.query('select host(device_ip_address) as ip from user_activity.sessions where id = $1', [res.json().id]);
    return rows[0].ip as string | null;
  };
  assert.equal(await stored({}, {}), '10.0.0.5');
  assert.equal(await stored({}, { 'x-forwarded-for': '203.0.113.7' }), '10.0.0.5', 'no proxy trusted: the socket address');
  assert.equal(await stored({ TRUST_PROXY: '10.0.0.0/8' }, { 'x-forwarded-for': '203.0.113.7' }), '203.0.113.7');
});
