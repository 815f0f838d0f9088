import { waitFor } from '../../support/wait.ts';
import type { Replica, Stack } from './stack.ts';

/**
 * The replica's process holds the single-runner lock of `job` right now: the lease names its pid
 * (holder = host:pid:runner) and that lease's lock session holds the advisory lock in pg_locks.
 */
export async function holdsJobLock(stack: Stack, r: Replica, job: string): Promise<boolean> {
  const { rowCount } = await stack.database.pool.query(
    `select 1 from platform.job_leases l
       join pg_locks k on k.pid = l.backend_pid and k.locktype = 'advisory' and k.granted and k.objsubid = 1
      where l.name = $1 and l.holder like $2
        and ((k.classid::bigint << 32) | k.objid::bigint) = hashtext(l.name)::bigint`,
    [`job:scheduled:${job}`, `%:${r.service.child.pid}:%`],
  );
  return rowCount === 1;
}

/** SIGSTOP while the replica holds `job`'s lock; a stop that landed between two runs is undone and tried again. */
export async function freezeHolding(stack: Stack, r: Replica, job: string): Promise<void> {
  for (let attempt = 1; attempt <= 20; attempt++) {
    await waitFor(`${r.name} to hold the lock of ${job}`, () => holdsJobLock(stack, r, job), 60_000);
    r.service.child.kill('SIGSTOP');
    if (await holdsJobLock(stack, r, job)) return;
    r.service.child.kill('SIGCONT');
  }
  throw new Error(`never froze ${r.name} while it held the lock of ${job}`);
}
