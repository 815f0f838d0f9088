import type pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelayMs, type Backoff } from '../backoff/index.ts';
import { errorText, pgErrorOf } from '../errors/index.ts';
import type { Logger } from '../observability/logger.ts';
import { DB_DEFAULTS } from './defaults.ts';


/** Where a PostgreSQL URL points, for logs: host, port and database — never the user's password. */
export function databaseTarget(url: string): { host: string; port: number; database: string } {
  try {
    const u = new URL(url);
    return {
      host: u.searchParams.get('host') ?? (u.hostname.replace(/^\[|\]$/g, '') || 'localhost'),
      port: Number(u.port || 5432),
      database: decodeURIComponent(u.pathname.replace(/^\//, '')),
    };
  } catch {
    return { host: 'unknown', port: 5432, database: '' };
  }
}

/** Start-up gave up on the database; `message` is the one line to print (it names the host). */
export class DatabaseUnreachableError extends Error {
  override name = 'DatabaseUnreachableError';
  readonly host: string;
  readonly port: number;
  readonly attempts: number;
  constructor(message: string, target: { host: string; port: number }, attempts: number, cause: unknown) {
    super(message, { cause });
    this.host = target.host;
    this.port = target.port;
    this.attempts = attempts;
  }
}

/**
 * A server that answers and refuses (wrong password, no such role or database) will not change its
 * mind within a start-up wait: give up at once. Anything else — refused, timed out, unknown host,
 * "the database system is starting up", too many connections — may pass: try again.
 */
function isPermanent(err: unknown): boolean {
  const code = pgErrorOf(err)?.code;
  return code !== undefined && (code.startsWith('28') || code === '3D000');
}

/**
 * Waits for the database's first answer: tries `select 1` on the pool (each try bounded by the
 * pool's connect timeout), with the kernel backoff in between, for up to `waitMs` (0 = one try).
 * Logs one warning per failed try; throws DatabaseUnreachableError when the wait is over (or the
 * server refuses the login), and the signal's reason when start-up is cancelled.
 */
export async function waitForDatabase(
  pool: pg.Pool,
  opts: { url: string; waitMs: number; log: Logger; signal?: AbortSignal; backoff?: Backoff },
): Promise<void> {
  const target = databaseTarget(opts.url);
  const where = `${target.host}:${target.port}`;
  const started = Date.now();
  const deadline = started + opts.waitMs;
  for (let attempt = 1; ; attempt++) {
    opts.signal?.throwIfAborted();
    try {
      await pool.query('select 1');
      if (attempt > 1) opts.log.info({ ...target, attempts: attempt, waitedMs: Date.now() - started }, 'database reachable');
      return;
    } catch (err) {
      opts.signal?.throwIfAborted();
      const error = errorText(err);
      if (isPermanent(err)) {
        throw new DatabaseUnreachableError(`database at ${where} refused the connection: ${error}`, target, attempt, err);
      }
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) {
        const waited = Math.round((Date.now() - started) / 1000);
        throw new DatabaseUnreachableError(
          `database at ${where} unreachable after ${waited} s (${attempt} tries within the start-up wait of ${opts.waitMs} ms): ${error}`,
          target,
          attempt,
          err,
        );
      }
      const retryInMs = Math.min(backoffDelayMs(opts.backoff ?? DB_DEFAULTS.databaseStartupBackoff, attempt), remainingMs);
      opts.log.warn({ ...target, attempt, retryInMs, remainingMs, error }, 'database not reachable yet; retrying');
      await sleep(retryInMs, undefined, { signal: opts.signal }).catch(() => undefined);
    }
  }
}
