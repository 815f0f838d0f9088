import { after } from 'node:test';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb, createPool, type Db } from '../../src/platform/db/index.ts';

export interface TestDatabase {
  url: string;
  pool: pg.Pool;
  db: Db;
  /** Ends the pool and drops the database (called at file end unless `dropAtEnd: false`). */
  drop(): Promise<void>;
}

function adminUrl(): string {
  const url = process.env.TEST_PG_ADMIN_URL;
  if (!url) throw new Error('TEST_PG_ADMIN_URL is unset: run the tests with `npm test`');
  return url;
}

/**
 * A fresh database cloned from the migrated template, dropped when the test file ends. Each file
 * gets its own, so files run in parallel without seeing each other's rows.
 */
export function createTestDatabase(opts: { poolMax?: number; dropAtEnd?: boolean } = {}): Promise<TestDatabase> {
  return newDatabase(`template ${process.env.TEST_PG_TEMPLATE ?? 'pin_template'}`, opts);
}

/** An empty database (no migration applied), for tests of the migrations themselves; dropped at file end. */
export function createEmptyDatabase(opts: { poolMax?: number } = {}): Promise<TestDatabase> {
  return newDatabase('', opts);
}

async function newDatabase(from: string, opts: { poolMax?: number; dropAtEnd?: boolean }): Promise<TestDatabase> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`create database ${name} ${from}`);
  await admin.end();
  const url = adminUrl().replace(/\/[^/]+$/, `/${name}`);
  const pool = createPool(url, opts.poolMax ?? 10);
  const drop = async () => {
    await pool.end().catch(() => undefined);
    const c = new pg.Client({ connectionString: adminUrl() });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`);
    await c.end();
  };
  if (opts.dropAtEnd !== false) after(drop);
  return { url, pool, db: createDb(pool), drop };
}
