import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { createPool, DEFAULT_DB_TIMEOUTS } from '../../../src/platform/db/index.ts';
import { loadConfig } from '../../../src/config.ts';
import { createTestDatabase } from '../../support/db.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const tdb = await createTestDatabase({ poolMax: 2 });

/** A pool of ONE connection, so "the pool stays usable" means the very connection that failed. */
function onePool(t: { after(fn: () => Promise<void>): void }, timeouts: Parameters<typeof createPool>[4]): pg.Pool {
  const pool = createPool(tdb.url, 1, undefined, 'timeouts-test', timeouts);
  t.after(() => pool.end());
  return pool;
}

async function until(what: string, check: () => Promise<boolean>, deadlineMs = 10_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

test('pooled connections get the configured defaults: statement 30 s, idle in transaction 60 s', async () => {
  const config = loadConfig({});
  assert.equal(DEFAULT_DB_TIMEOUTS.DATABASE_CONNECT_TIMEOUT, 5000);
  assert.equal(config.DATABASE_STATEMENT_TIMEOUT, 30_000);
  assert.equal(DEFAULT_DB_TIMEOUTS.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT, 60_000);
  // test/support/db.ts calls createPool(url, max) with no options: the same defaults apply.
  const { rows } = await tdb.pool.query<{ st: string; iit: string }>(
    `select current_setting('statement_timeout') as st, current_setting('idle_in_transaction_session_timeout') as iit`,
  );
  assert.deepEqual(rows[0], { st: '30s', iit: '1min' });
});

test('a statement longer than the statement timeout fails with 57014 and the pool stays usable', { timeout: 10_000 }, async (t) => {
  const pool = onePool(t, { DATABASE_STATEMENT_TIMEOUT: 200 });
  await assert.rejects(pool.query('select pg_sleep(2)'), (err: { code?: string }) => err.code === '57014');
  const { rows } = await pool.query<{ one: number }>('select 1 as one');
  assert.equal(rows[0]?.one, 1);
});

test('a statement stuck on a row lock is cut by the statement timeout', { timeout: 10_000 }, async (t) => {
  const pool = onePool(t, { DATABASE_STATEMENT_TIMEOUT: 200 });
  await tdb.pool.query('create table if not exists timeouts_locked (id int primary key)');
  await tdb.pool.query('insert into timeouts_locked values (1) on conflict do nothing');
  const holder = await tdb.pool.connect();
  try {
    await holder.query('begin');
    await holder.query('select * from timeouts_locked where id = 1 for update');
    await assert.rejects(
      pool.query('update timeouts_locked set id = 1 where id = 1'),
      (err: { code?: string }) => err.code === '57014',
    );
  } finally {
    await holder.query('rollback');
    holder.release();
  }
});

test('a transaction left idle past the idle-in-transaction timeout is ended by the server', { timeout: 10_000 }, async (t) => {
  const pool = onePool(t, { DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: 200 });
  const client = await pool.connect();
  const errors: { code?: string }[] = [];
  client.on('error', (err) => errors.push(err as { code?: string }));
  const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  await client.query('begin');
  await client.query('select 1');
  // Observed from another session: the backend goes away by itself.
  await until('the idle transaction to be terminated', async () => {
    const res = await tdb.pool.query('select 1 from pg_stat_activity where pid = $1', [pid]);
    return res.rowCount === 0;
  });
  await until('the client to hear of it', async () => errors.length > 0);
  assert.equal(errors[0]?.code, '25P03'); // idle_in_transaction_session_timeout
  client.release(true);
  const { rows } = await pool.query<{ one: number }>('select 1 as one');
  assert.equal(rows[0]?.one, 1);
});

test('connecting to a host that never answers fails after the connect timeout', { timeout: 15_000 }, async (t) => {
  // Accepts TCP and then says nothing, like a hung or firewalled database host.
  const sockets = new Set<Socket>();
  const silent = createServer((s) => sockets.add(s));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const port = (silent.address() as { port: number }).port;
  const pool = createPool(`postgres://nobody:nothing@127.0.0.1:${port}/none`, 1, undefined, 'silent', {
    DATABASE_CONNECT_TIMEOUT: 200,
  });
  t.after(() => pool.end());
  await assert.rejects(pool.query('select 1'), /timeout/i);
});

test('waiting for a free pooled client is not cut by the connect timeout', async (t) => {
  // 1 s, not less: the pool's first connect is itself bound by it, and on a loaded 2-core machine
  // it took over 100 ms (a full run failed there, before the wait this test is about began).
  const pool = onePool(t, { DATABASE_CONNECT_TIMEOUT: 1000 });
  const busy = await pool.connect();
  const queued = pool.query<{ one: number }>('select 1 as one');
  // Hold the only client well past the connect timeout (a pool-level timeout would reject by then).
  await Promise.race([queued.catch(() => undefined), sleep(2500)]);
  busy.release();
  const { rows } = await queued;
  assert.equal(rows[0]?.one, 1);
});
