import { test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { createPool } from '../../../src/platform/db/index.ts';
import { logCapture } from '../../support/logs.ts';
import { createTestDatabase } from '../../support/db.ts';

test('pool.end() returns once every connection is closed, so a server stopped next terminates none of them', async () => {
  const database = await createTestDatabase();
  const logs = logCapture('warn');
  const pool = createPool(database.url, 4, logs.log, 'pin-pool-end-test');
  const clients: pg.PoolClient[] = await Promise.all([1, 2, 3, 4].map(() => pool.connect()));
  let closed = 0;
  for (const c of clients) c.on('end', () => closed++);
  await Promise.all(clients.map((c) => c.query('select 1')));
  for (const c of clients) c.release();

  await pool.end();
  // pg-pool alone resolves end() when it has merely asked the idle clients to end: the embedded
  // server stopped right after (main.ts's shutdown order) then terminated those backends, and each
  // logged "terminating connection due to administrator command".
  assert.equal(closed, clients.length, 'every connection closed when end() returns');
  assert.equal(logs.text(), '', 'nothing logged');
});
