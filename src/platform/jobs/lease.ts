import { hostname } from 'node:os';
import type { Logger } from '../observability/logger.ts';
import { newId } from '../time.ts';
import type { HeldLock, LockConnection } from './advisory-lock.ts';
import type { JobMetrics } from './job-metrics.ts';
import { fenceLost, RENEW_SQL, TAKE_OVER_SQL, type Fence } from './lease-sql.ts';
import { JOBS_DEFAULTS } from './defaults.ts';

/**
 * The lease on top of a single-runner job's advisory lock. The advisory lock alone outlives a holder
 * that stopped running without dying (SIGSTOP, an event loop stuck in a loop): its kernel still
 * answers the lock session's keepalives, so the lock stays and the job stops on every replica. So
 * each acquisition also writes a lease (platform.job_leases: holder, the lock session's backend pid,
 * a fencing token that grows on every acquisition, expires_at = database clock + LockTtl); the holder
 * renews it every LockTtl/3 while its run goes on. A replica that finds the lock busy and the lease
 * expired ends the holder's lock session (pg_terminate_backend: the same role may) and takes the lock
 * over — logged as a warning and counted in job_lock_takeovers_total{job}.
 *
 * A holder that wakes up again steps down: its run's deadline (LockTtl − margin after the run began,
 * lock-deadline.ts) lies before any expiry of its lease, so that timer is already due and aborts the
 * run's signal as soon as the process runs again; its lock session is gone (every run that held a
 * lock on it is aborted) and a renewal would find another token. The signal is checked between
 * rows, not inside a statement already on its way, so writes a late run could still make are fenced
 * by the token in their own statement (leaseHolds in lease-sql.ts).
 */

/** How long a takeover waits for the stale holder's session to exit (JOBS_DEFAULTS.takeoverTerminateWaitMs). */
export const TERMINATE_WAIT_MS = JOBS_DEFAULTS.takeoverTerminateWaitMs;

/** The runner's name in job_leases.holder: host and process, and which runner within the process. */
export const leaseHolderId = (): string => `${hostname()}:${process.pid}:${newId().slice(-12)}`;

export interface LeaseDeps {
  locks: LockConnection;
  log: Logger;
  metrics: JobMetrics;
  /** This runner's leaseHolderId(). */
  holder: string;
}

export interface HeldLease {
  lock: HeldLock;
  fence: Fence;
  /** Aborted when a renewal finds the lease taken over. */
  signal: AbortSignal;
  /** Stops renewing and releases the advisory lock. */
  release(): Promise<void>;
}

interface StaleHolder {
  holder: string;
  backendPid: number;
  token: string;
  terminated: boolean;
}

/** The lock and its lease, taking them over from a holder whose lease expired; null while someone else holds them. */
export async function acquireLease(deps: LeaseDeps, job: string, key: string, ttlMs: number): Promise<HeldLease | null> {
  const request = { holder: deps.holder, ttlMs };
  let lock = await deps.locks.tryLock(key, request);
  if (!lock) {
    const [stale] = await deps.locks.statement<StaleHolder>(TAKE_OVER_SQL, [key, TERMINATE_WAIT_MS]);
    if (!stale) return null;
    const fields = { job, lockKey: key, oldHolder: stale.holder, oldBackendPid: stale.backendPid, oldToken: stale.token };
    if (!stale.terminated) {
      deps.log.warn(fields, 'single-runner lease expired but its holder\'s lock session did not end in time; trying again next run');
      return null;
    }
    lock = await deps.locks.tryLock(key, request);
    if (!lock) return null; // another replica took it in between
    deps.metrics.recordTakeover(job);
    deps.log.warn(
      { ...fields, newHolder: deps.holder, token: lock.token },
      'single-runner lock taken over: its holder stopped renewing the lease, so its lock session was ended',
    );
  }
  if (lock.token === undefined) throw new Error('lock taken without a lease token');
  return keep(deps, lock, { key, token: lock.token }, ttlMs);
}

function keep(deps: LeaseDeps, lock: HeldLock, fence: Fence, ttlMs: number): HeldLease {
  const lost = new AbortController();
  let renewTimer: NodeJS.Timeout | undefined;
  let stopped = false;
  const renew = async () => {
    try {
      const rows = await deps.locks.statement(RENEW_SQL, [fence.key, fence.token, ttlMs]);
      if (stopped) return;
      if (rows.length === 0) {
        deps.log.warn({ lockKey: fence.key, token: fence.token }, 'single-runner lease renewal refused: another replica took the lock over');
        lost.abort(fenceLost(fence, 'lease renewal'));
        return;
      }
    } catch (err) {
      // A lost lock session aborts the run by itself (advisory-lock.ts); anything else is tried again.
      if (!stopped) deps.log.warn({ err, lockKey: fence.key }, 'single-runner lease renewal failed');
    }
    if (!stopped) schedule();
  };
  const schedule = () => {
    renewTimer = setTimeout(() => void renew(), Math.max(1, Math.floor(ttlMs / 3)));
    renewTimer.unref();
  };
  schedule();
  return {
    lock,
    fence,
    signal: lost.signal,
    async release() {
      stopped = true;
      clearTimeout(renewTimer);
      await lock.release();
    },
  };
}
