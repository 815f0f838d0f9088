import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createLockConnection } from '../../../src/platform/jobs/advisory-lock.ts';
import { LeaseLostError, lockKeyOf, type JobDefinition } from '../../../src/platform/jobs/index.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { markPublished } from '../../../src/platform/outbox/sql.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { LEVEL, runsCounted, startReplica, type Replica } from './support.ts';
import { waitFor } from '../../support/wait.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const tdb: TestDatabase = await createTestDatabase();

interface LeaseRow {
  holder: string;
  backendPid: number;
  token: string;
  expiresAt: Date;
}

async function leaseOf(key: string): Promise<LeaseRow | undefined> {
  const { rows } = await tdb.pool.query<LeaseRow>(
    `select holder, backend_pid as "backendPid", token::text as token, expires_at as "expiresAt" from platform.job_leases where name = $1`,
    [key],
  );
  return rows[0];
}

async function takeovers(r: Replica, job: string): Promise<number> {
  const { values } = await r.registry.getSingleMetric('job_lock_takeovers_total')!.get();
  return values.find((v) => v.labels.job === job)?.value ?? 0;
}

const sessionAlive = async (pid: number) => (await tdb.pool.query('select 1 from pg_stat_activity where pid = $1', [pid])).rowCount === 1;

test('the holder renews its lease from the database clock every LockTtl/3 and keeps its token; the other replica does not take over a live holder', async (t) => {
  const a = startReplica(t, tdb);
  const b = startReplica(t, tdb);
  const job = (): JobDefinition => ({
    name: 'renewed',
    every: 100,
    singleRunner: true,
    lockTtlMs: 4500, // renewals every 1500 ms; the run is aborted at its deadline, 2500 ms in
    async run({ signal }) {
      while (!signal.aborted) await sleep(20);
      return {};
    },
  });
  a.runner.register(job());
  await a.runner.start();
  const key = lockKeyOf('renewed');
  await waitFor('replica a to hold the lease', async () => (await leaseOf(key))?.backendPid === a.runner.lockConnectionPid());
  const first = (await leaseOf(key))!;
  b.runner.register(job());
  await b.runner.start();
  await sleep(2000); // past the first renewal, before the run's deadline
  const renewed = (await leaseOf(key))!;

  assert.equal(renewed.token, first.token, 'a renewal keeps the token');
  assert.equal(renewed.holder, first.holder);
  assert.ok(
    renewed.expiresAt.getTime() - first.expiresAt.getTime() >= 1000,
    `expiry moved on by a renewal (${first.expiresAt.toISOString()} → ${renewed.expiresAt.toISOString()})`,
  );
  assert.ok(await runsCounted(b.registry, 'renewed', 'skipped') >= 5, 'replica b found the lock busy meanwhile');
  assert.equal(await takeovers(b, 'renewed'), 0, 'a live holder is never taken over');
  assert.ok(await sessionAlive(first.backendPid));
});

test('a holder frozen by SIGSTOP loses the lock after its lease expires: the other replica ends its lock session and takes over; woken by SIGCONT it steps down and its fenced write is refused', async (t) => {
  const name = 'frozen-holder';
  const key = lockKeyOf(name);
  const lockTtlMs = 4000;
  const child = spawn(process.execPath, ['test/platform/jobs/lease-holder.child.ts'], {
    env: { ...process.env, DATABASE_URL: tdb.url, JOB: name, LOCK_TTL_MS: String(lockTtlMs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  });
  const lines: { event: string; token?: string; reason?: string; fencedWrite?: number }[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.push(JSON.parse(l)));

  await waitFor('the child to start a run holding the lock', () => lines.some((l) => l.event === 'start'), 30_000);
  child.kill('SIGSTOP');
  const frozenAt = Date.now();
  const held = (await leaseOf(key))!;
  assert.equal(lines.at(-1)?.token, held.token, 'frozen inside a run that holds the current lease');
  assert.ok(await sessionAlive(held.backendPid), 'the frozen holder\'s lock session is still up (its kernel answers keepalives)');

  const b = startReplica(t, tdb);
  let taken: string | undefined;
  b.runner.register({
    name,
    every: 100,
    singleRunner: true,
    lockTtlMs,
    async run({ signal, fence }) {
      taken ??= fence?.token;
      while (!signal.aborted) await sleep(20);
      return {};
    },
  });
  await b.runner.start();
  await waitFor('replica b to take the lock over', () => taken !== undefined, lockTtlMs + 5000);
  const tookMs = Date.now() - frozenAt;
  assert.ok(tookMs <= lockTtlMs + 2000, `taken over ${tookMs} ms after the freeze`);
  assert.equal(BigInt(taken!), BigInt(held.token) + 1n, 'the takeover got the next token');
  assert.equal(await takeovers(b, name), 1);
  const line = b.logs.find((l) => l.level === LEVEL.warn && l.msg.startsWith('single-runner lock taken over'));
  assert.ok(line, 'the takeover is logged as a warning');
  assert.equal(line.job, name);
  assert.equal(line.oldHolder, held.holder);
  assert.equal(line.oldToken, held.token);
  assert.equal(line.token, taken);
  assert.notEqual(line.newHolder, held.holder);
  assert.equal(await sessionAlive(held.backendPid), false, 'the frozen holder\'s lock session was ended');

  child.kill('SIGCONT');
  await waitFor('the woken holder to stop its run', () => lines.some((l) => l.event === 'stopped'), 10_000);
  const stopped = lines.find((l) => l.event === 'stopped')!;
  assert.equal(stopped.fencedWrite, 0, 'the woken holder\'s write under its old token changed nothing');
  const { rows } = await tdb.pool.query(`select 1 from platform.job_state where last_error = 'late write'`);
  assert.equal(rows.length, 0);
  await sleep(1000); // the woken replica keeps ticking: it must find the lock busy, not run alongside
  assert.equal(lines.filter((l) => l.event === 'start').length, 1, 'the woken holder never ran the job again while b held it');
  assert.equal((await leaseOf(key))!.token, taken);
});

test('a fenced write under a token another acquisition has replaced is refused: the outbox mark throws and marks nothing', async (t) => {
  const log = createLogger('silent');
  const [one, two] = [createLockConnection({ databaseUrl: tdb.url, log }), createLockConnection({ databaseUrl: tdb.url, log })];
  t.after(() => Promise.all([one.close(), two.close()]));
  const key = 'job:scheduled:fence-test';
  const old = await one.tryLock(key, { holder: 'one', ttlMs: 60_000 });
  assert.ok(old?.token);
  await old.release();
  const current = await two.tryLock(key, { holder: 'two', ttlMs: 60_000 });
  assert.ok(current?.token);
  assert.equal(BigInt(current.token), BigInt(old.token) + 1n, 'every acquisition grows the token');

  const ids = await tdb.db.transaction(async (tx) => {
    const events = [1, 2].map((n) => ({
      topic: 'pin.test.fence.v1',
      key: `k${n}`,
      eventType: 'FenceTested',
      aggregateType: 'Test',
      aggregateId: `a${n}`,
      occurredAt: new Date(),
      payload: { n },
    }));
    return enqueue(tx, events);
  });
  await assert.rejects(markPublished(tdb.db, ids, new Date(), { key, token: old.token }), LeaseLostError);
  const unmarked = await tdb.pool.query('select 1 from platform.outbox where published_at is null and id = any($1)', [ids]);
  assert.equal(unmarked.rowCount, 2, 'nothing was marked under the old token');
  assert.equal(await markPublished(tdb.db, ids, new Date(), { key, token: current.token }), 2, 'the current token marks');
  await current.release();
});
