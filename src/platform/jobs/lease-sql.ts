import { sql, type SQL } from 'drizzle-orm';

/**
 * The statements of the single-runner lease (lease.ts), run on the lock session itself so that
 * `pg_backend_pid()` is the session holding the advisory lock. Every time is the database's clock
 * (clock_timestamp(): replicas' clocks may disagree, and now() would stop at the statement's start).
 */

/**
 * The advisory lock and, only when it was granted, the lease in one statement: a replica that finds
 * the lock busy never sees the lock held under a lease older than the lock (it would take the new
 * holder for a stale one). The token grows on every acquisition. The lock CTE holds a volatile
 * function, so PostgreSQL evaluates it once.
 */
export const ACQUIRE_SQL = `
  with lock as (select pg_try_advisory_lock(hashtext($1)) as locked),
  lease as (
    insert into platform.job_leases as l (name, holder, backend_pid, token, acquired_at, expires_at)
    select $1, $2, pg_backend_pid(), 1, clock_timestamp(), clock_timestamp() + $3 * interval '1 millisecond'
      from lock where locked
    on conflict (name) do update set holder = excluded.holder, backend_pid = excluded.backend_pid,
      token = l.token + 1, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
    returning token)
  select lock.locked, lease.token::text as token from lock left join lease on true`;

/** Pushes the expiry on, only for the holder of `token` on this session; no row = the lease is gone. */
export const RENEW_SQL = `
  update platform.job_leases set expires_at = clock_timestamp() + $3 * interval '1 millisecond'
   where name = $1 and token = $2::bigint and backend_pid = pg_backend_pid()
  returning token`;

/**
 * Ends the lock session of a holder whose lease expired, and only while that session still holds
 * the lock (pg_locks: an advisory lock on a bigint key shows its high half as classid, its low half
 * as objid, objsubid 1). The row lock makes a holder's renewal or a new acquisition in flight finish
 * first; the expiry is then checked again on what it wrote. pg_terminate_backend waits up to $2 ms
 * for the session to exit, so its locks are free when this returns true.
 */
export const TAKE_OVER_SQL = `
  with stale as (
    select holder, backend_pid, token from platform.job_leases
     where name = $1 and expires_at < clock_timestamp()
     for update)
  select s.holder, s.backend_pid as "backendPid", s.token::text as token,
         pg_terminate_backend(s.backend_pid, $2) as terminated
    from stale s
   where exists (
     select 1 from pg_locks k
      where k.locktype = 'advisory' and k.granted and k.pid = s.backend_pid and k.objsubid = 1
        and ((k.classid::bigint << 32) | k.objid::bigint) = hashtext($1)::bigint)`;

/** The lock a fenced write runs under: the lease's key and the token its acquisition got. */
export interface Fence {
  key: string;
  token: string;
}

/**
 * A condition for a write's WHERE: true only while `fence` is still the lease's current token. FOR
 * SHARE makes a takeover (which changes the token) wait for this write's transaction, so no write
 * under an old token commits after the new holder's acquisition. Without a fence (a job run outside
 * the runner, a job that is not single-runner) it is always true.
 */
export function leaseHolds(fence: Fence | undefined): SQL {
  if (!fence) return sql`true`;
  return sql`exists (select 1 from platform.job_leases where name = ${fence.key} and token = ${fence.token}::bigint for share)`;
}

/**
 * A write refused because its lease was taken over: a single-runner job's lock (`fenceLost`), or
 * a queue row a worker leased (the identity fan-out's tasks). The one lease-loss error of every job.
 */
export class LeaseLostError extends Error {
  constructor(what: string, lease: string) {
    super(`${what} refused: ${lease} was taken over by another worker`);
    this.name = 'LeaseLostError';
  }
}

/** The error of a write refused by its job lock's fence: another replica has taken the lock over since this run acquired it. */
export const fenceLost = (fence: Fence, what: string): LeaseLostError => new LeaseLostError(what, `the lease on ${fence.key} (token ${fence.token})`);
