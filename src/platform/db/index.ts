import pg from 'pg';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../observability/logger.ts';

export type Db = NodePgDatabase<Record<string, never>>;
/** The handle a domain mutation and the rows that announce it share (outbox, task queue, …). */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** Anything raw SQL can run on: the pool, a checked-out client. */
export type Queryable = Pick<pg.Pool, 'query'>;

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../drizzle', import.meta.url));

export function createPool(url: string, max: number, log?: Logger, applicationName = 'pin-platform-jobs'): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, application_name: applicationName });
  // An idle client dying (server restart, terminated backend) must not crash the process.
  pool.on('error', (err) => log?.warn({ err }, 'idle database connection failed'));
  return pool;
}

export function createDb(pool: pg.Pool): Db {
  return drizzle(pool);
}

/**
 * Applies the committed drizzle/ migrations. Replicas starting together serialise on an advisory
 * lock, because drizzle's migrator takes none of its own.
 */
export async function migrateDatabase(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query(`select pg_advisory_lock(hashtext('pin:migrations'))`);
    await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR});
  } finally {
    await client.query(`select pg_advisory_unlock(hashtext('pin:migrations'))`).catch(() => undefined);
    client.release();
  }
}

/** True when the database answers a trivial query within the timeout. */
export async function pingDatabase(pool: pg.Pool, timeoutMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      pool.query('select 1'),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
