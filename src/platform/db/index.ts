import pg from 'pg';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../observability/logger.ts';

import { DB_DEFAULTS } from './defaults.ts';
import { query, type Db } from './query.ts';

export { DatabaseUnreachableError, databaseTarget, waitForDatabase } from './startup.ts';
export { query, type Db, type QueryOptions, type Rows } from './query.ts';
export { DB_DEFAULTS, type DbTuning } from './defaults.ts';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../drizzle', import.meta.url));

/**
 * Limits every pooled connection runs under (the names are the settings', so the config fits as is).
 * 0 leaves a server-side limit at the server's own default (off unless the database sets one).
 */
export interface DbTimeouts {
  /**
   * Establishing one connection; a silent host otherwise hangs connect() for the OS TCP timeout (~2 min).
   * Not a setting (DB_DEFAULTS.databaseConnectTimeoutMs, 5 s); tests shorten it here.
   */
  DATABASE_CONNECT_TIMEOUT?: number;
  /** Server-side statement_timeout: a query stuck on a lock fails with 57014 instead of holding its connection. */
  DATABASE_STATEMENT_TIMEOUT?: number;
  /**
   * Server-side idle_in_transaction_session_timeout: a transaction its caller forgot is ended, its locks
   * freed. Not a setting (1 min fixed: no transaction here waits on anything but the database); tests shorten it here.
   */
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT?: number;
}

/** DB_DEFAULTS' limits under the settings' names; callers that pass nothing (benches, tests) get the same limits. */
export const DEFAULT_DB_TIMEOUTS: Required<DbTimeouts> = {
  DATABASE_CONNECT_TIMEOUT: DB_DEFAULTS.databaseConnectTimeoutMs,
  DATABASE_STATEMENT_TIMEOUT: DB_DEFAULTS.databaseStatementTimeoutMs,
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: DB_DEFAULTS.databaseIdleInTransactionTimeoutMs,
};

export function createPool(
  url: string,
  max: number,
  log?: Logger,
  applicationName = 'pin-platform-jobs',
  timeouts: DbTimeouts = {},
): pg.Pool {
  const t = { ...DEFAULT_DB_TIMEOUTS, ...timeouts };
  const connectTimeoutMs = t.DATABASE_CONNECT_TIMEOUT;
  // The connect timeout goes on the client, not the pool: pg-pool would also apply it to waiting
  // for a free client, failing a burst of requests that merely queue behind a busy pool.
  class TimedClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectTimeoutMs });
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max,
    application_name: applicationName,
    Client: TimedClient,
    // Sent as startup parameters: they hold from the first statement, on every connection.
    statement_timeout: t.DATABASE_STATEMENT_TIMEOUT,
    idle_in_transaction_session_timeout: t.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT,
  });
  // An idle client dying (server restart, terminated backend) must not crash the process.
  pool.on('error', (err) => log?.warn({ err }, 'idle database connection failed'));
  // Nor one that dies while checked out: pg-pool drops its error listener for the time a client is
  // lent, and an 'error' event without a listener is an uncaught exception. The holder learns of it
  // at its next statement; here it is only logged.
  const lent = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => lent.add(client));
  pool.on('release', (_err, client) => lent.delete(client));
  pool.on('connect', (client) =>
    client.on('error', (err) => {
      if (lent.has(client)) log?.warn({ err: { message: err.message, code: (err as { code?: unknown }).code } }, 'database connection failed while in use');
    }),
  );
  endWaitsForClose(pool, connectTimeoutMs);
  return pool;
}

/**
 * pg-pool's end() resolves once it has asked every idle client to end, not once their connections
 * are closed: a server stopped right after (the embedded one at shutdown) still finds those backends
 * and terminates them, and each client logs "terminating connection due to administrator command".
 * So end() here also waits until every client's connection is closed (bounded, for a silent server).
 */
function endWaitsForClose(pool: pg.Pool, boundMs: number): void {
  const open = new Set<pg.PoolClient>();
  let allClosed: (() => void) | undefined;
  pool.on('connect', (c) => open.add(c));
  pool.on('remove', (c) => {
    open.delete(c);
    if (open.size === 0) allClosed?.();
  });
  const endPool = pool.end.bind(pool) as () => Promise<void>;
  pool.end = (async () => {
    await endPool();
    if (open.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => (allClosed = resolve)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs))),
    ]);
    clearTimeout(timer);
  }) as typeof pool.end;
}

export function createDb(pool: pg.Pool): Db {
  return drizzle(pool);
}

/**
 * Kernel parts that apply after every module's: the push part's tables began in the messenger's part
 * (and the notifications' part wrote into them) until its first migration moved them into its own
 * schema, so on a fresh database that move must run after those parts' histories.
 */
const LAST_PARTS = ['push'];

/** Migration folders in the order they apply: the platform first, then each module's (by name), then LAST_PARTS. */
export function migrationParts(dir = MIGRATIONS_DIR): string[] {
  const present = (name: string) => existsSync(join(dir, name, 'meta/_journal.json'));
  const modules = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'platform' && !LAST_PARTS.includes(d.name) && present(d.name))
    .map((d) => d.name)
    .sort();
  return ['platform', ...modules, ...LAST_PARTS.filter(present)];
}

/**
 * Applies the committed migrations of every part (drizzle/<part>/), each tracked in its own table so
 * modules evolve their schemas independently. Replicas starting together serialise on an advisory
 * lock, because drizzle's migrator takes none of its own.
 *
 * The pool's statement timeout is lifted for this session: a migration rewriting a big table, and a
 * replica waiting on the lock while another migrates, may legitimately take longer than any query.
 * Both belong to one session, so this holds one client and talks to pg directly (drizzle's migrator
 * runs on that client), like the kernel's other session-bound connections.
 */
export async function migrateDatabase(pool: pg.Pool, dir = MIGRATIONS_DIR): Promise<void> {
  const client = await pool.connect();
  let reusable = true;
  try {
    await client.query('set statement_timeout = 0');
    await client.query(`select pg_advisory_lock(hashtext('pin:migrations'))`);
    for (const part of migrationParts(dir)) {
      await migrate(drizzle(client), {
        migrationsFolder: join(dir, part),
        migrationsTable: `__drizzle_migrations_${part.replace(/[^a-z0-9]/gi, '_')}`,
      });
    }
  } finally {
    await client.query(`select pg_advisory_unlock(hashtext('pin:migrations'))`).catch(() => undefined);
    // Back to the pool's limits before anyone else gets this client; one that cannot be reset is dropped.
    await client.query('reset statement_timeout').catch(() => {
      reusable = false;
    });
    client.release(!reusable);
  }
}

/** True when the database answers a trivial query within the timeout. */
export async function pingDatabase(db: Db, timeoutMs = DB_DEFAULTS.databasePingTimeoutMs): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      query(db, sql`select 1`),
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
