import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../../src/app.ts';
import { loadConfig } from '../../../../src/config.ts';
import { createPool } from '../../../../src/platform/db/index.ts';
import { signToken } from '../../../../src/platform/http/auth.ts';
import { messengerModule } from '../../../../src/modules/messenger/index.ts';
import { REALTIME_DISPATCH_JOB } from '../../../../src/platform/push/index.ts';
import { createTestDatabase } from '../../../support/db.ts';
import { logCapture, type LogCapture } from '../../../support/logs.ts';
import { metricValue } from '../../../support/metrics.ts';
import { connectClient } from '../../../support/signalr.ts';
import { startTcpProxy } from '../../../support/tcp-proxy.ts';
import { waitFor } from '../../../support/wait.ts';
import { insertReplicaUser } from '../support/app.ts';

const sharedRedis = process.env.REDIS_URL;
if (!sharedRedis) throw new Error('REDIS_URL is unset: run the tests with `npm test` (scripts/services.sh starts Redis)');

const database = await createTestDatabase({ dropAtEnd: false });
const instances: { app: FastifyInstance; end(): Promise<void> }[] = [];
after(async () => {
  for (const i of instances) await i.app.close();
  for (const i of instances) await i.end();
  await database.drop();
});

/** Small settings, so the LockTtl passes within the test: MaxRunDuration 300 ms, backoff 200 ms; LockTtl 2.5 s and no jitter in code (fixed values). */
const SMALL = {
  MESSENGER_REALTIME_MAX_RUN_DURATION: '300ms',
  MESSENGER_REALTIME_BACKOFF_BASE: '200ms',
};
const SMALL_TUNING = { dispatchLockTtlMs: 2500, dispatchBackoffJitter: 0 };

/** One replica of the service: its own pool, hub (Redis backplane), job runner and log, on the shared database and Redis. */
async function instance(env: Record<string, string>, opts: { redisWaitsForever?: boolean } = {}, logs: LogCapture = logCapture('info')) {
  // The Redis command and push timeouts far out, so a hung Redis path hangs past every timeout.
  const forever = 600_000;
  const config = loadConfig({ LOG_LEVEL: 'info', PORT: '0', JOBS_ENABLED: 'true', REALTIME_BACKPLANE_ENABLED: 'true', ...SMALL, ...env });
  const pool = createPool(database.url, 5);
  const app = await buildApp(config, { pool, databaseUrl: database.url, log: logs.log,
    modules: [messengerModule()],
    tuning: { ...SMALL_TUNING, ...(opts.redisWaitsForever ? { redisCommandTimeoutMs: forever, realtimePushTimeoutMs: forever } : {}) },
  });
  instances.push({ app, end: () => pool.end() });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}/hubs/messenger`;
  return { app, url, logs, token: (userId: string) => signToken({ userId, admin: false }, config.JWT_SECRET) };
}

const advisoryLocks = async (): Promise<number> => {
  const { rows } = await database.pool.query<{ n: number }>(
    `select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())`,
  );
  return rows[0]!.n;
};

test('two instances, one database and Redis: A hangs on Redis mid-dispatch; past the LockTtl B takes over and a real SignalR client gets every message', async (t) => {
  const proxy = await startTcpProxy(Number(new URL(sharedRedis).port));
  // A's Redis path hangs past every timeout it has: only the lock deadline can free the job. Its
  // timer is slow, so once its run is abandoned the next run is B's (its ticks come every 100 ms).
  const a = await instance({
    REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
    MESSENGER_REALTIME_POLLING_INTERVAL: '1m',
  }, { redisWaitsForever: true });
  const b = await instance({ REDIS_URL: sharedRedis, MESSENGER_REALTIME_POLLING_INTERVAL: '100ms' });
  t.after(() => proxy.restore());

  const [alice, bob] = [await insertReplicaUser(database.pool), await insertReplicaUser(database.pool)];
  const aliceToken = await a.token(alice.id);
  const call = async (path: string, payload: object) => {
    const res = await a.app.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${aliceToken}` }, payload });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: string; seq: number }>();
  };
  const chat = await call('/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] });
  await a.app.platform.startBackground();
  const pending = async () => (await database.pool.query(`select 1 from push.realtime_outbox where status <> 'Done'`)).rowCount ?? 0;
  await waitFor('A to dispatch the chat creation', async () => (await pending()) === 0);
  const client = await connectClient(b.url, await b.token(bob.id), { events: ['message_received'] });

  proxy.hang();
  const sent: { id: string; seq: number }[] = [];
  for (let i = 1; i <= 5; i++) sent.push(await call(`/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: `m${i}` }));
  await waitFor('A to claim rows and hang pushing them, holding the lock', async () => {
    const { rows } = await database.pool.query<{ n: number }>(`select count(*)::int as n from push.realtime_outbox where attempts > 0 and status = 'Pending'`);
    return rows[0]!.n > 0 && (await advisoryLocks()) === 1;
  });
  await b.app.platform.startBackground();

  const seqs = () => new Set(client.received.map((r) => (r.payload as { Seq: number }).Seq));
  await waitFor('every message at the client through B', () => sent.every((m) => seqs().has(m.seq)), 20_000);
  await waitFor('every row Done', async () => (await pending()) === 0);

  // A may take the freed lock again before B's next tick (a wake that came in during its hung run
  // starts a run at once) and hang again: each such run is abandoned in turn, and B still takes over.
  const abandoned = a.logs.lines().filter((l) => l.msg === 'job run abandoned past its lock deadline');
  assert.ok(abandoned.length >= 1, 'A abandoned its hung run');
  for (const line of abandoned) assert.deepEqual([line.job, line.lockTtlMs, line.level], [REALTIME_DISPATCH_JOB, 2500, 50]);
  assert.equal(await metricValue(a.app.platform.registry, 'job_runs_abandoned_total', { job: REALTIME_DISPATCH_JOB }), abandoned.length);
  assert.ok(b.logs.lines().some((l) => l.msg === 'realtime dispatched'), 'B delivered them');
});
