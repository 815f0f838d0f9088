import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPool, migrateDatabase } from '../../../src/platform/db/index.ts';
import { createEmptyDatabase } from '../../support/db.ts';

/** A migrations folder in drizzle's layout whose one platform migration runs for `seconds`. */
function slowMigrations(seconds: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'pin-slow-migration-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const part = join(dir, 'platform');
  mkdirSync(join(part, 'meta'), { recursive: true });
  const tag = '0000_slow_backfill';
  writeFileSync(
    join(part, 'meta/_journal.json'),
    JSON.stringify({ version: '7', dialect: 'postgresql', entries: [{ idx: 0, version: '7', when: 1, tag, breakpoints: true }] }),
  );
  // Stands in for a rewrite of a big table: one statement longer than the pool's statement timeout.
  writeFileSync(join(part, `${tag}.sql`), `create table slow_done as select true as slept from pg_sleep(${seconds});`);
  return dir;
}

test('migrations are not cut by the pool statement timeout, and the client goes back with it', async (t) => {
  // An empty database (not the migrated template), so the folder below is the only migration history.
  const { url } = await createEmptyDatabase({ poolMax: 1 });
  const pool = createPool(url, 1, undefined, 'migrate-timeout-test', { DATABASE_STATEMENT_TIMEOUT: 200 });
  t.after(() => pool.end());
  // The same pool cuts the same statement outside the migration path.
  await assert.rejects(pool.query('select pg_sleep(1)'), (err: { code?: string }) => err.code === '57014');

  await migrateDatabase(pool, slowMigrations(1));

  const { rows } = await pool.query<{ slept: boolean }>('select slept from slow_done');
  assert.deepEqual(rows, [{ slept: true }]);
  // One connection in the pool: this is the client the migration used, back at the pool's limit.
  const setting = await pool.query<{ st: string }>(`select current_setting('statement_timeout') as st`);
  assert.equal(setting.rows[0]?.st, '200ms');
});
