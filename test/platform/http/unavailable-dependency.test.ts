import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { Redis } from 'ioredis';
import { buildTestApp } from '../../support/app.ts';
import { freePort } from '../../support/service-process.ts';
import { defineModule } from '../../../src/platform/module.ts';

type LogLine = { level: number; msg?: string; err?: { code?: unknown; message?: string } };

/**
 * The whole app with routes whose database or Redis goes away under them, as a module's would: a
 * server that refuses the connection (stopped, failing over), a backend the server terminates (a
 * restart's shutdown), a Redis that is not there, and, for contrast, a plain bug and a protocol violation (the client's bug).
 */
async function setUp() {
  const closedPort = await freePort(); // nothing listens here
  const unreachable = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${closedPort}/none`, connectionTimeoutMillis: 2000 });
  after(() => unreachable.end());
  // Redis as the service's own clients use it: no offline queue, so a command fails at once while it is away.
  const redisAway = new Redis(`redis://127.0.0.1:${closedPort}`, { enableOfflineQueue: false, maxRetriesPerRequest: 1 }).on('error', () => undefined);
  after(() => redisAway.disconnect());
  const outage = defineModule({}, ({ pool }) => ({
    name: 'outage',
    routes: (app) => {
      app.get('/test/unreachable', async () => (await unreachable.query('select 1')).rows);
      app.get('/test/redis-away', async () => ({ value: await redisAway.get('presence') }));
      app.get('/test/terminated', async () => {
        const client = await pool.connect();
        try {
          return (await client.query('select pg_terminate_backend(pg_backend_pid())')).rows;
        } finally {
          client.release(true); // the connection is gone: never back into the pool
        }
      });
      app.get('/test/bug', async () => {
        throw new Error('a plain bug');
      });
      // A bind with more parameters than the statement takes: PostgreSQL answers 08P01 (protocol violation).
      app.get('/test/protocol-bug', async () => (await pool.query('select $1::int as n', [1, 2])).rows);
    },
  }));
  const lines: LogLine[] = [];
  const { app } = await buildTestApp({}, { logDestination: { write: (l: string) => void lines.push(JSON.parse(l) as LogLine) }, logLevel: 'info', modules: [outage] });
  return { app, lines };
}

const { app, lines } = await setUp();

for (const [route, what, cause] of [
  ['/test/unreachable', 'a database that refuses the connection', 'ECONNREFUSED'],
  ['/test/terminated', 'a database that terminates the backend', '57P01'],
  ['/test/redis-away', 'a Redis that is away', /^Stream isn't writeable/],
] as const) {
  test(`${what} answers 503 SERVICE_UNAVAILABLE with Retry-After, logged as a warning`, async () => {
    const before = lines.length;
    const res = await app.inject({ method: 'GET', url: route });
    assert.equal(res.statusCode, 503);
    assert.equal(res.json().code, 'SERVICE_UNAVAILABLE');
    assert.equal(res.headers['retry-after'], '5');
    const logged = lines.slice(before);
    const warning = logged.find((l) => l.msg === 'request failed: a dependency is unavailable');
    assert.equal(warning?.level, 40, `no warning in ${JSON.stringify(logged)}`);
    // The driver's code, or (ioredis's errors carry none) its words.
    if (typeof cause === 'string') assert.equal(warning?.err?.code, cause);
    else assert.match(warning?.err?.message ?? '', cause);
    assert.equal(logged.some((l) => l.msg === 'request failed'), false, 'not logged as a server fault');
  });
}

test('a plain bug still answers 500 INTERNAL_ERROR without Retry-After', async () => {
  const res = await app.inject({ method: 'GET', url: '/test/bug' });
  assert.equal(res.statusCode, 500);
  assert.deepEqual(res.json(), { code: 'INTERNAL_ERROR', message: 'internal error' });
  assert.equal(res.headers['retry-after'], undefined);
});

test("a protocol violation (08P01, the client's own bug) still answers 500, not 503", async () => {
  const before = lines.length;
  const res = await app.inject({ method: 'GET', url: '/test/protocol-bug' });
  assert.equal(res.statusCode, 500);
  assert.equal(res.json().code, 'INTERNAL_ERROR');
  const failed = lines.slice(before).find((l) => l.msg === 'request failed');
  assert.equal(failed?.err?.code, '08P01', 'logged as a server fault, with its SQLSTATE');
});
