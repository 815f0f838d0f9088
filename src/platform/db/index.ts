import pg from 'pg';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
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

/** Migration folders in the order they apply: the platform first, then each module's (by name). */
export function migrationParts(dir = MIGRATIONS_DIR): string[] {
  const modules = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'platform' && existsSync(join(dir, d.name, 'meta/_journal.json')))
    .map((d) => d.name)
    .sort();
  return ['platform', ...modules];
}

/**
 * Applies the committed migrations of every part (drizzle/<part>/), each tracked in its own table so
 * modules evolve their schemas independently. Replicas starting together serialise on an advisory
 * lock, because drizzle's migrator takes none of its own.
 */
export async function migrateDatabase(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query(`select pg_advisory_lock(hashtext('pin:migrations'))`);
    for (const part of migrationParts()) {
      await migrate(drizzle(client), {
        migrationsFolder: join(MIGRATIONS_DIR, part),
        migrationsTable: `__drizzle_migrations_${part.replace(/[^a-z0-9]/gi, '_')}`,
      });
    }
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
