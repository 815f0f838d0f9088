import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { modules } from '../../../src/modules/index.ts';
import { AppError } from '../../../src/platform/http/errors.ts';
import { REFUSAL_HOLD_MS } from '../../../src/platform/http/user-concurrency.ts';
import type { ModuleFactory } from '../../../src/platform/module.ts';
import { newId } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';
import { logCapture } from '../../support/logs.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The per-user bound on requests in progress (src/platform/http/user-concurrency.ts), on the whole
 * app. A test module adds a user route whose handler waits until the test opens its gate, so the
 * test decides how long a request stays in progress; the refusals are shown on real routes too.
 */

type Gate = { open: () => void; entered: number; wait: Promise<void> };

function gateModule(): { module: ModuleFactory; gate: () => Gate } {
  let gate = newGate();
  function newGate(): Gate {
    let open = () => {};
    const wait = new Promise<void>((resolve) => (open = resolve));
    return { open, entered: 0, wait };
  }
  const schema = (operationId: string) => ({ operationId, response: { 409: { type: 'object', properties: { code: { type: 'string', enum: ['TEST_GATE_FAILED'] }, message: { type: 'string' } } } } });
  const module = Object.assign(
    () => ({
      name: 'gate',
      routes: (app: FastifyInstance) => {
        const waitAtGate = async () => {
          const current = gate;
          current.entered += 1;
          await current.wait;
        };
        app.get('/api/test/gate', { preHandler: app.requireUser, schema: schema('testGate') }, async () => {
          await waitAtGate();
          return { ok: true };
        });
        app.get('/api/test/gate-fails', { preHandler: app.requireUser, schema: schema('testGateFails') }, async () => {
          await waitAtGate();
          throw new AppError('TEST_GATE_FAILED', 'the handler refused after its wait', 409);
        });
        app.get('/api/test/preHandler-fails', { preHandler: [app.requireUser, async () => { throw new AppError('TEST_GATE_FAILED', 'a check after the token refused', 409); }], schema: schema('testPreHandlerFails') }, async () => ({ ok: true }));
      },
    }),
    { settingNames: [] },
  );
  return {
    module,
    gate: () => {
      gate = newGate();
      return gate;
    },
  };
}

const LIMIT = 4;

/** The app's log lines stay off the runner's stdout. */
const quiet = () => logCapture('warn').stream;

async function setUp() {
  const gates = gateModule();
  const t = await buildTestApp({ HTTP_MAX_CONCURRENT_REQUESTS_PER_USER: String(LIMIT) }, { modules: [...modules, gates.module], logDestination: quiet() });
  const bearer = async (userId = newId()) => ({ authorization: `Bearer ${await t.token({ userId })}` });
  return { ...t, gates, bearer };
}

test('a user past their requests in progress gets 429 USER_CONCURRENCY_LIMIT with Retry-After on any user route, while another user is served; counted in a metric', async () => {
  const { app, gates, bearer } = await setUp();
  const flooder = await bearer();
  const gate = gates.gate();
  const held = Array.from({ length: LIMIT }, () => app.inject({ url: '/api/test/gate', headers: flooder }));
  await waitFor('the user’s requests in progress', () => gate.entered === LIMIT);

  const refused = await app.inject({ url: '/api/messenger/chats', headers: flooder });
  assert.equal(refused.statusCode, 429, refused.body);
  assert.deepEqual(refused.json(), { code: 'USER_CONCURRENCY_LIMIT', message: refused.json().message });
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal((await app.inject({ url: '/api/events?limit=500', headers: flooder })).statusCode, 429);
  assert.equal(await metricValue(app.platform.registry, 'http_user_concurrency_refused_total'), 2);

  const other = await app.inject({ url: '/api/messenger/chats', headers: await bearer() });
  assert.equal(other.statusCode, 200, 'another user has slots of their own');

  gate.open();
  assert.deepEqual((await Promise.all(held)).map((r) => r.statusCode), Array(LIMIT).fill(200));
  assert.equal((await app.inject({ url: '/api/messenger/chats', headers: flooder })).statusCode, 200, 'the slots came back');
});

test('a refusal is answered only after a hold, so a client that resends at once gets one refusal a hold, not a flood of them', async () => {
  const { app, gates, bearer } = await setUp();
  const flooder = await bearer();
  const gate = gates.gate();
  const held = Array.from({ length: LIMIT }, () => app.inject({ url: '/api/test/gate', headers: flooder }));
  await waitFor('the user’s requests in progress', () => gate.entered === LIMIT);
  // One connection resending the moment each refusal arrives, for two and a half holds.
  const answers: number[] = [];
  const start = performance.now();
  while (performance.now() - start < 2.5 * REFUSAL_HOLD_MS) {
    const sent = performance.now();
    const r = await app.inject({ url: '/api/messenger/chats', headers: flooder });
    assert.equal(r.statusCode, 429, r.body);
    answers.push(performance.now() - sent);
  }
  // Timers never fire early: each refusal waited its hold (1 ms of clock rounding allowed).
  assert.ok(answers.every((ms) => ms >= REFUSAL_HOLD_MS - 1), `every refusal held (${answers.length} refusals): ${answers.slice(0, 10).map(Math.round).join(', ')} ms…`);
  assert.ok(answers.length <= 3, `${answers.length} refusals in 2.5 holds`);
  gate.open();
  await Promise.all(held);
});

test('a slot is released when its request ends in an error, in the handler or in a check after the token', async () => {
  const { app, gates, bearer } = await setUp();
  const user = await bearer();
  for (let i = 0; i < LIMIT + 1; i++) {
    assert.equal((await app.inject({ url: '/api/test/preHandler-fails', headers: user })).statusCode, 409);
  }
  const gate = gates.gate();
  const failing = Array.from({ length: LIMIT }, () => app.inject({ url: '/api/test/gate-fails', headers: user }));
  await waitFor('the failing requests in progress', () => gate.entered === LIMIT);
  gate.open();
  assert.deepEqual((await Promise.all(failing)).map((r) => r.statusCode), Array(LIMIT).fill(409));
  // Had any of the 2 × LIMIT + 1 errors kept its slot, fewer than LIMIT would be left.
  const next = gates.gate();
  const again = Array.from({ length: LIMIT }, () => app.inject({ url: '/api/test/gate', headers: user }));
  await waitFor('a full set of slots again', () => next.entered === LIMIT);
  next.open();
  assert.deepEqual((await Promise.all(again)).map((r) => r.statusCode), Array(LIMIT).fill(200));
});

test('an aborted request keeps its slot until its handler ends (aborting cannot lift the bound), then gives it back', async () => {
  const { app, gates, bearer } = await setUp();
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const user = await bearer();
  const gate = gates.gate();
  const sockets = Array.from({ length: LIMIT }, () => {
    const req = request({ port, host: '127.0.0.1', path: '/api/test/gate', headers: user });
    req.on('error', () => {}); // the abort below
    req.end();
    return req;
  });
  await waitFor('the requests in progress', () => gate.entered === LIMIT);
  for (const req of sockets) req.destroy();
  // The server has seen the aborts (its sockets closed) while the handlers still wait.
  const connections = () => new Promise<number>((resolve) => app.server.getConnections((_e, n) => resolve(n)));
  await waitFor('the server to see the aborts', async () => (await connections()) === 0);
  const during = await app.inject({ url: '/api/messenger/chats', headers: user });
  assert.equal(during.statusCode, 429, 'the aborted requests’ handlers still run: their slots are held');

  gate.open();
  await waitFor('the slots back after the handlers ended', async () => (await app.inject({ url: '/api/messenger/chats', headers: user })).statusCode === 200);
  const next = gates.gate();
  const again = Array.from({ length: LIMIT }, () => app.inject({ url: '/api/test/gate', headers: user }));
  await waitFor('every slot back, none leaked', () => next.entered === LIMIT);
  next.open();
  assert.deepEqual((await Promise.all(again)).map((r) => r.statusCode), Array(LIMIT).fill(200));
});

test('the event stream reads one page at a time per user: a second page in parallel is 429 USER_CONCURRENCY_LIMIT, the user’s other routes are served', async () => {
  const { app, database, bearer } = await setUp();
  const user = await bearer();
  // The stream's read waits on its horizon table while this transaction holds it; the notification feed does not read it.
  const holder = await database.pool.connect();
  try {
    await holder.query('begin');
    await holder.query('lock table push.realtime_event_horizon in access exclusive mode');
    const first = app.inject({ url: '/api/events?after=e0&limit=500', headers: user });
    const waiting = async () =>
      (await database.pool.query(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)).rows[0].n === 1;
    await waitFor('the first page waiting in PostgreSQL', waiting);
    const second = await app.inject({ url: '/api/events?after=e0&limit=500', headers: user });
    assert.equal(second.statusCode, 429, second.body);
    assert.equal(second.json().code, 'USER_CONCURRENCY_LIMIT');
    assert.equal(second.headers['retry-after'], '1');
    assert.equal((await app.inject({ url: '/api/notifications', headers: user })).statusCode, 200, 'within the user’s own bound');
    await holder.query('commit');
    assert.equal((await first).statusCode, 200);
  } finally {
    holder.release();
  }
  assert.equal((await app.inject({ url: '/api/events?after=e0&limit=500', headers: user })).statusCode, 200, 'the page’s slot came back');
});

test('HTTP_MAX_CONCURRENT_REQUESTS_PER_USER=0 turns the bound off, and the code is then not documented', async () => {
  const gates = gateModule();
  const t = await buildTestApp({ HTTP_MAX_CONCURRENT_REQUESTS_PER_USER: '0' }, { modules: [...modules, gates.module], logDestination: quiet() });
  const user = { authorization: `Bearer ${await t.token()}` };
  const gate = gates.gate();
  const held = Array.from({ length: 10 }, () => t.app.inject({ url: '/api/test/gate', headers: user }));
  await waitFor('ten requests in progress', () => gate.entered === 10);
  assert.equal((await t.app.inject({ url: '/api/messenger/chats', headers: user })).statusCode, 200);
  gate.open();
  await Promise.all(held);
  const doc = (await t.app.inject({ url: '/docs/json' })).json();
  assert.equal(doc.paths['/api/messenger/chats'].get.responses['429'], undefined);
});

test('the API document lists 429 USER_CONCURRENCY_LIMIT with Retry-After on user routes, beside RATE_LIMITED where a route has both', async () => {
  const { app } = await buildTestApp({}, { logDestination: quiet() });
  const doc = (await app.inject({ url: '/docs/json' })).json();
  const codes = (path: string, method: string) => {
    const response = doc.paths[path][method].responses['429'];
    const ref: string = response.content['application/json'].schema.$ref;
    assert.ok(response.headers['Retry-After'], `${method} ${path}: Retry-After`);
    return doc.components.schemas[ref.split('/').pop()!].properties.code.enum;
  };
  assert.deepEqual(codes('/api/messenger/chats', 'get'), ['USER_CONCURRENCY_LIMIT']);
  assert.deepEqual(codes('/api/events', 'get'), ['USER_CONCURRENCY_LIMIT']);
  assert.deepEqual(codes('/api/messenger/chats/{chatId}/messages', 'post'), ['RATE_LIMITED', 'USER_CONCURRENCY_LIMIT']);
});
