import pg from 'pg';
import type { Logger } from '../observability/logger.ts';
import { withTimeout } from '../time.ts';
import { ACQUIRE_SQL } from './lease-sql.ts';
import { JOBS_DEFAULTS } from './defaults.ts';

/**
 * Single-runner locks live on ONE dedicated connection per runner, never a pooled one: a session
 * advisory lock belongs to the session, so a pooled client would hand it to whoever checks the
 * client out next, and the pool could close it while the lock is meant to be held.
 *
 * When that connection dies, PostgreSQL drops its locks at once and another replica may take over;
 * the runs that held them are aborted through their signal so they do not run alongside it. The
 * connection is reopened lazily by the next tryLock.
 */
export const LOCK_APPLICATION_NAME = 'pin-jobs-lock';

/** Server-side TCP keepalive of the lock session (JOBS_DEFAULTS.lockKeepalive: the lock is free about 25 s after its node died). */
export const LOCK_KEEPALIVE: LockKeepalive = JOBS_DEFAULTS.lockKeepalive;
export type LockKeepalive = { idleSeconds: number; intervalSeconds: number; count: number; userTimeoutMs: number };

/** libpq `options`: per-session settings the server applies from the connection's start. */
export function keepaliveOptions(k: LockKeepalive = LOCK_KEEPALIVE): string {
  return [
    `-c tcp_keepalives_idle=${k.idleSeconds}`,
    `-c tcp_keepalives_interval=${k.intervalSeconds}`,
    `-c tcp_keepalives_count=${k.count}`,
    `-c tcp_user_timeout=${k.userTimeoutMs}`,
  ].join(' ');
}

/** An unlock that has not answered by then is treated as failed (JOBS_DEFAULTS.lockReleaseTimeoutMs). */
export const LOCK_RELEASE_TIMEOUT_MS = JOBS_DEFAULTS.lockReleaseTimeoutMs;

export interface HeldLock {
  /** Aborted when the lock's connection is lost (the lock is gone with it). */
  signal: AbortSignal;
  /** The lease's fencing token, when the lock was taken with a lease (lease.ts). */
  token?: string;
  release(): Promise<void>;
}

/** Who takes the lease with the lock, and for how long (lease.ts). */
export interface LeaseRequest {
  holder: string;
  ttlMs: number;
}

export interface LockConnection {
  /**
   * The lock when free, null when another session holds it. Throws when the database is unreachable.
   * With a lease, the lease row is written in the same statement (lease-sql.ts ACQUIRE_SQL).
   */
  tryLock(key: string, lease?: LeaseRequest): Promise<HeldLock | null>;
  /** One statement on the lock session (the lease's renewal and takeover); opens the connection if needed. */
  statement<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]>;
  /** Backend pid of the open lock connection (ops and tests), null when none is open. */
  backendPid(): number | null;
  /** A server setting as the lock session sees it (ops and tests); opens the connection if needed. */
  sessionSetting(name: string): Promise<string>;
  close(): Promise<void>;
}

export class LockConnectionLostError extends Error {
  constructor(cause: unknown) {
    super('job lock connection lost', { cause });
    this.name = 'LockConnectionLostError';
  }
}

export function createLockConnection(opts: {
  databaseUrl: string;
  log: Logger;
  applicationName?: string;
  keepalive?: LockKeepalive;
}): LockConnection {
  const keepalive = opts.keepalive ?? LOCK_KEEPALIVE;
  let client: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let closed = false;
  const holders = new Set<AbortController>();
  // Several jobs lock and unlock on this one client; pg deprecates concurrent queries on a client,
  // so they take turns (each is a single round trip).
  let turn: Promise<unknown> = Promise.resolve();
  function query<R extends pg.QueryResultRow>(c: pg.Client, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    const run = turn.then(() => c.query<R>(text, values));
    turn = run.catch(() => undefined);
    return run;
  }

  function lost(c: pg.Client, err: unknown): void {
    if (client !== c) return; // an old or never-established client
    client = null;
    const held = [...holders];
    holders.clear();
    opts.log.error({ err, heldLocks: held.length }, 'job lock connection lost; aborting runs that held its locks');
    for (const h of held) h.abort(new LockConnectionLostError(err));
    c.end().catch(() => undefined);
  }

  function connect(): Promise<pg.Client> {
    if (closed) return Promise.reject(new Error('lock connection closed'));
    if (client) return Promise.resolve(client);
    connecting ??= (async () => {
      const c = new pg.Client({
        connectionString: opts.databaseUrl,
        application_name: opts.applicationName ?? LOCK_APPLICATION_NAME,
        // Both ends probe: the server so a dead replica's locks are freed (see LOCK_KEEPALIVE), this
        // side so a silently dropped connection aborts the runs that held its locks.
        options: keepaliveOptions(keepalive),
        keepAlive: true,
        keepAliveInitialDelayMillis: keepalive.idleSeconds * 1000,
        connectionTimeoutMillis: 5000,
      });
      // Without an error listener a dying connection would crash the process.
      c.on('error', (err) => lost(c, err));
      c.on('end', () => lost(c, new Error('connection ended')));
      try {
        await c.connect();
      } finally {
        connecting = null;
      }
      if (closed) {
        await c.end().catch(() => undefined);
        throw new Error('lock connection closed');
      }
      client = c;
      return c;
    })();
    return connecting;
  }

  async function tryLock(key: string, lease?: LeaseRequest): Promise<HeldLock | null> {
    const c = await connect();
    // Registered before the query, so a connection lost right after the lock was granted still
    // aborts this holder.
    const holder = new AbortController();
    holders.add(holder);
    let locked = false;
    let token: string | undefined;
    try {
      const res = lease
        ? await query<{ locked: boolean; token: string | null }>(c, ACQUIRE_SQL, [key, lease.holder, lease.ttlMs])
        : await query<{ locked: boolean; token: null }>(c, 'select pg_try_advisory_lock(hashtext($1)) as locked, null as token', [key]);
      locked = res.rows[0]?.locked === true;
      token = res.rows[0]?.token ?? undefined;
    } catch (err) {
      // A session lock granted by a statement that then failed stays held (advisory locks ignore
      // rollback): give it back, or drop the session if even that fails.
      await query(c, 'select pg_advisory_unlock(hashtext($1))', [key]).catch((e: unknown) => lost(c, e));
      throw err;
    } finally {
      if (!locked) holders.delete(holder);
    }
    if (!locked) return null;
    return {
      signal: holder.signal,
      ...(token === undefined ? {} : { token }),
      release: async () => {
        holders.delete(holder);
        if (holder.signal.aborted || client !== c) return; // the lock went with its session
        try {
          await withTimeout(query(c, 'select pg_advisory_unlock(hashtext($1))', [key]), LOCK_RELEASE_TIMEOUT_MS, 'advisory unlock');
        } catch (err) {
          // A lock we cannot release would block every other replica for good: drop the session,
          // which releases everything it holds.
          opts.log.error({ err }, 'job lock release failed; closing the lock connection');
          lost(c, err);
        }
      },
    };
  }

  return {
    tryLock,
    async statement<R extends pg.QueryResultRow>(text: string, values: unknown[]) {
      return (await query<R>(await connect(), text, values)).rows;
    },
    backendPid: () => (client as (pg.Client & { processID?: number | null }) | null)?.processID ?? null,
    async sessionSetting(name) {
      const res = await query<{ value: string }>(await connect(), 'select current_setting($1) as value', [name]);
      return res.rows[0]!.value;
    },
    async close() {
      // A connect still in flight sees `closed` when it completes and ends its own client.
      closed = true;
      const c = client;
      client = null;
      for (const h of holders) h.abort(new Error('lock connection closed'));
      holders.clear();
      await c?.end().catch(() => undefined);
    },
  };
}
