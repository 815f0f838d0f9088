import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLockConnection, LOCK_KEEPALIVE } from '../../../src/platform/jobs/advisory-lock.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { createTestDatabase } from '../../support/db.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const tdb = await createTestDatabase({ poolMax: 2 });
const log = createLogger('silent');

async function keepaliveSettings(conn: ReturnType<typeof createLockConnection>): Promise<Record<string, string>> {
  const names = ['tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'tcp_user_timeout'];
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, await conn.sessionSetting(n)] as const)));
}

test('the lock session has short server-side TCP keepalives, so a vanished node frees its locks in seconds', async (t) => {
  const conn = createLockConnection({ databaseUrl: tdb.url, log });
  t.after(() => conn.close());
  const held = await conn.tryLock('keepalive-test');
  assert.ok(held, 'the lock is free');
  // The test server is reached over TCP on 127.0.0.1, where these settings take effect (a Unix
  // socket would report 0): 10 s idle, then 3 probes 5 s apart, instead of PostgreSQL's 2 h.
  assert.deepEqual(await keepaliveSettings(conn), {
    tcp_keepalives_idle: '10',
    tcp_keepalives_interval: '5',
    tcp_keepalives_count: '3',
    tcp_user_timeout: '25000',
  });
  assert.deepEqual(LOCK_KEEPALIVE, { idleSeconds: 10, intervalSeconds: 5, count: 3, userTimeoutMs: 25_000 });
  await held.release();
});

test('keepalive values given to the lock connection are the ones its session runs with', async (t) => {
  const conn = createLockConnection({
    databaseUrl: tdb.url,
    log,
    keepalive: { idleSeconds: 7, intervalSeconds: 2, count: 4, userTimeoutMs: 15_000 },
  });
  t.after(() => conn.close());
  assert.deepEqual(await keepaliveSettings(conn), {
    tcp_keepalives_idle: '7',
    tcp_keepalives_interval: '2',
    tcp_keepalives_count: '4',
    tcp_user_timeout: '15000',
  });
});
