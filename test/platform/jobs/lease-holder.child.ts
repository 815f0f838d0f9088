/**
 * A replica holding one single-runner job's lock, as its own process so the lease test can freeze it
 * for real (SIGSTOP) and wake it (SIGCONT). Prints one JSON line per event on stdout:
 *   {"event":"start","token":…}  the run holds the lock (its lease's token)
 *   {"event":"stopped","reason":…,"fencedWrite":n}  the run's signal aborted; n = rows its fenced write changed
 * Env: DATABASE_URL, JOB (name), LOCK_TTL_MS.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { createDb, createPool, query } from '../../../src/platform/db/index.ts';
import { createJobRunner, leaseHolds } from '../../../src/platform/jobs/index.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';

const url = process.env.DATABASE_URL!;
const log = createLogger('silent');
const pool = createPool(url, 2, log);
const db = createDb(pool);
const runner = createJobRunner({ db, databaseUrl: url, log, registry: new Registry() });
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

runner.register({
  name: process.env.JOB!,
  every: 100,
  singleRunner: true,
  lockTtlMs: Number(process.env.LOCK_TTL_MS),
  async run({ signal, fence }) {
    say({ event: 'start', token: fence?.token });
    while (!signal.aborted) await sleep(20);
    // What a woken holder's late write meets: the fence in its own statement.
    const { rowCount } = await query(db, sql`update platform.job_state set last_error = 'late write' where ${leaseHolds(fence)}`);
    say({ event: 'stopped', reason: (signal.reason as Error).name, fencedWrite: rowCount });
    return {};
  },
});
await query(db, sql`insert into platform.job_state (name) values ('lease-holder-child') on conflict do nothing`);
await runner.start();
process.on('SIGTERM', () => void runner.stop().then(() => pool.end()).then(() => process.exit(0)));
