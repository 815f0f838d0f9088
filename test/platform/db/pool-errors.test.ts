import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPool } from '../../../src/platform/db/index.ts';
import { createTestDatabase } from '../../support/db.ts';
import { logCapture } from '../../support/logs.ts';
import { waitFor } from '../../support/wait.ts';

const tdb = await createTestDatabase();

test('a connection that dies while checked out (database restart, terminated backend) is logged, not an uncaught exception', async (t) => {
  const logs = logCapture('warn');
  const pool = createPool(tdb.url, 2, logs.log, 'pool-errors-test');
  t.after(() => pool.end());
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  t.after(() => process.off('uncaughtException', onUncaught));

  // A transaction between two statements: the client is checked out, no query is running.
  const client = await pool.connect();
  await client.query('begin');
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  await tdb.pool.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
  await waitFor('the failure logged', () => logs.lines().some((l) => l.msg === 'database connection failed while in use'), 5000);
  await sleep(50);
  assert.deepEqual(uncaught, [], 'no uncaught exception');
  // The caller learns of it at its next statement, and the pool replaces the connection.
  await assert.rejects(client.query('select 1'));
  client.release(true);
  assert.equal((await pool.query<{ one: number }>('select 1 as one')).rows[0]!.one, 1);
});
