import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { batchPhase, defineBatchWorker, type BatchRunContext, type Outcome } from '../../../src/platform/jobs/index.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { newId } from '../../../src/platform/time.ts';
import { ReportedError } from '../../../src/platform/errors/index.ts';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { LEVEL, startReplica, type LogLine } from './support.ts';

const tdb: TestDatabase = await createTestDatabase();

interface Row {
  id: string;
  n: number;
}

let tableNo = 0;
/** A queue table of `count` pending rows; claim takes them with SKIP LOCKED, as the real jobs do. */
async function queue(count: number) {
  const table = `bw_rows_${++tableNo}`;
  await tdb.pool.query(`create table ${table} (id text primary key, n int not null, status text not null default 'pending')`);
  await tdb.pool.query(`insert into ${table} (id, n) select 'r' || lpad(g::text, 5, '0'), g from generate_series(1, $1) g`, [count]);
  return {
    table,
    async claim(limit: number, exclude: readonly string[] = []): Promise<Row[]> {
      const { rows } = await tdb.pool.query<Row>(
        `update ${table} set status = 'claimed' where id in (
           select id from ${table} where status = 'pending' and not (id = any($2::text[])) order by id limit $1 for update skip locked)
         returning id, n`,
        [limit, exclude],
      );
      return rows.sort((a, b) => a.n - b.n);
    },
    async record(outcomes: readonly Outcome<Row, unknown>[]): Promise<void> {
      const ids = (s: Outcome<Row, unknown>['status']) => outcomes.filter((o) => o.status === s).map((o) => o.row.id);
      await tdb.pool.query(`update ${table} set status = 'done' where id = any($1::text[])`, [ids('done')]);
      await tdb.pool.query(`update ${table} set status = 'pending' where id = any($1::text[])`, [ids('released')]);
      await tdb.pool.query(`update ${table} set status = 'failed' where id = any($1::text[])`, [ids('failed')]);
    },
    async statuses(): Promise<Record<string, number>> {
      const { rows } = await tdb.pool.query<{ status: string; n: number }>(`select status, count(*)::int n from ${table} group by status`);
      return Object.fromEntries(rows.map((r) => [r.status, r.n]));
    },
  };
}

function capture() {
  const lines: LogLine[] = [];
  const log = createLogger('debug', { write: (l: string) => void lines.push(JSON.parse(l) as LogLine) });
  return { log, lines };
}

function context(overrides: Partial<BatchRunContext> = {}): BatchRunContext {
  return { jobRunId: newId(), signal: new AbortController().signal, log: capture().log, now: () => new Date(), ...overrides };
}

const schedule = { every: 3_600_000 } as const;

test('claims, processes and records bounded batches while they come back full, then stops at the short one', async () => {
  const q = await queue(25);
  const processed: number[] = [];
  const worker = defineBatchWorker({
    name: 'bw-drain',
    ...schedule,
    settings: { batchSize: 10, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row, number>({
        name: 'rows',
        claim: (limit) => q.claim(limit),
        process: async (row) => {
          processed.push(row.n);
          return row.n * 2;
        },
        record: (outcomes, run) => {
          run.count('doubled', outcomes.length);
          return q.record(outcomes);
        },
      }),
    ],
  });
  const counts = await worker.runOnce(context());
  assert.deepEqual(counts, { batches: 3, claimed: 25, failed: 0, released: 0, doubled: 25 });
  assert.deepEqual(processed, Array.from({ length: 25 }, (_, i) => i + 1), 'every row once, in claim order');
  assert.deepEqual(await q.statuses(), { done: 25 });
});

test('a stop between rows hands the rows not processed to record as released, and no new batch starts', async () => {
  const q = await queue(30);
  const stop = new AbortController();
  const worker = defineBatchWorker({
    name: 'bw-stop',
    ...schedule,
    settings: { batchSize: 10, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({
        name: 'rows',
        claim: (limit) => q.claim(limit),
        process: async (row) => {
          if (row.n === 4) stop.abort(new Error('deploy'));
        },
        record: (outcomes) => q.record(outcomes),
      }),
    ],
  });
  const counts = await worker.runOnce(context({ signal: stop.signal }));
  assert.equal(counts.claimed, 10);
  assert.equal(counts.released, 6, 'rows 5..10 were not started');
  assert.deepEqual(await q.statuses(), { done: 4, pending: 26 });
});

test('a run starts no new batch after maxRunMs; the rows it did not claim stay for the next run', async () => {
  const q = await queue(100);
  const worker = defineBatchWorker({
    name: 'bw-deadline',
    ...schedule,
    settings: { batchSize: 5, maxRunMs: 60 },
    phases: () => [
      batchPhase<Row>({
        name: 'rows',
        claim: (limit) => q.claim(limit),
        process: () => sleep(10),
        record: (outcomes) => q.record(outcomes),
      }),
    ],
  });
  const counts = await worker.runOnce(context());
  assert.ok(counts.batches >= 1 && counts.batches < 20, `stopped by the deadline after ${counts.batches} batches`);
  const s = await q.statuses();
  assert.equal(s.done, counts.claimed - counts.released);
  assert.equal(s.pending, 100 - s.done);
});

test('maxRunMs passing mid-batch aborts the run\'s signal: the rows not started are released, and the next run takes them', async () => {
  const q = await queue(5);
  const seen: { n: number; aborted: boolean }[] = [];
  const worker = defineBatchWorker({
    name: 'bw-mid-batch-deadline',
    ...schedule,
    settings: { batchSize: 10, maxRunMs: 100 },
    phases: () => [
      batchPhase<Row>({
        name: 'rows',
        claim: (limit) => q.claim(limit),
        // The first row of the first run outlasts the whole run (a slow push): the signal must abort under it.
        process: async (row, run) => {
          if (row.n === 1 && seen.length === 0) {
            await Promise.race([new Promise((resolve) => run.signal.addEventListener('abort', resolve, { once: true })), sleep(3000)]);
          }
          seen.push({ n: row.n, aborted: run.signal.aborted });
        },
        record: (outcomes) => q.record(outcomes),
      }),
    ],
  });
  const first = await worker.runOnce(context());
  assert.deepEqual(seen, [{ n: 1, aborted: true }], 'the signal aborted while row 1 was in flight');
  assert.deepEqual([first.claimed, first.released], [5, 4], 'rows 2..5 were never started');
  assert.deepEqual(await q.statuses(), { done: 1, pending: 4 });

  const second = await worker.runOnce(context());
  assert.deepEqual([second.claimed, second.released], [4, 0]);
  assert.deepEqual(await q.statuses(), { done: 5 });
});

test('a failing set-based record falls back to row by row: the bad row fails alone, the others are recorded', async () => {
  const q = await queue(6);
  const { log, lines } = capture();
  const worker = defineBatchWorker({
    name: 'bw-fallback',
    ...schedule,
    settings: { batchSize: 10, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({
        name: 'rows',
        claim: (limit) => q.claim(limit),
        process: async () => undefined,
        record: async (outcomes) => {
          if (outcomes.some((o) => o.row.n === 3)) throw new Error('row 3 violates a constraint');
          await q.record(outcomes);
        },
      }),
    ],
  });
  const counts = await worker.runOnce(context({ log }));
  assert.equal(counts.failed, 1);
  assert.deepEqual(await q.statuses(), { done: 5, claimed: 1 }, 'row 3 keeps its claim for a later retry; no other row is undone');
  assert.ok(lines.some((l) => l.level === LEVEL.warn && l.msg === 'batch record failed; recording row by row'));
  assert.ok(lines.some((l) => l.level === LEVEL.error && l.id === 'r00003'));
});

test('a row whose processing throws is its own failed outcome and is not claimed again in the same run', async () => {
  const q = await queue(4);
  const claims: string[][] = [];
  const worker = defineBatchWorker({
    name: 'bw-throw',
    ...schedule,
    settings: { batchSize: 2, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({
        name: 'rows',
        claim: async (limit, _run, exclude) => {
          claims.push([...exclude]);
          return q.claim(limit, exclude);
        },
        process: async (row) => {
          if (row.n === 1) throw new Error('provider refused');
        },
        // Failed rows go back to pending, so only `exclude` keeps the run from taking them again.
        record: (outcomes) => q.record(outcomes.map((o) => (o.status === 'failed' ? { row: o.row, status: 'released' as const } : o))),
      }),
    ],
  });
  const counts = await worker.runOnce(context());
  assert.equal(counts.failed, 1);
  assert.equal(counts.claimed, 4, 'row 1 was claimed once');
  assert.deepEqual(claims[1], ['r00001']);
  assert.deepEqual(await q.statuses(), { done: 3, pending: 1 });
});

test('overlapRecord: the next claim leaves the rows whose outcomes are still being recorded alone', async () => {
  const q = await queue(6);
  const excludes: string[][] = [];
  let recordsInFlight = 0;
  let maxInFlight = 0;
  const worker = defineBatchWorker({
    name: 'bw-overlap',
    ...schedule,
    settings: { batchSize: 3, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({
        name: 'rows',
        overlapRecord: true,
        claim: async (limit, _run, exclude) => {
          excludes.push([...exclude]);
          return q.claim(limit, exclude);
        },
        record: async (outcomes) => {
          maxInFlight = Math.max(maxInFlight, ++recordsInFlight);
          await sleep(30);
          await q.record(outcomes);
          recordsInFlight--;
        },
      }),
    ],
  });
  await worker.runOnce(context());
  assert.deepEqual(excludes[1], ['r00001', 'r00002', 'r00003'], 'batch 1 was still being recorded while batch 2 was claimed');
  assert.equal(maxInFlight, 1, 'at most one batch of outcomes in flight');
  assert.deepEqual(await q.statuses(), { done: 6 }, 'every outcome has landed when the run ends');
});

test('a claim that does the work and fails is redone one row at a time; a run of all-failed rows ends the phase', async () => {
  const q = await queue(4);
  const { log, lines } = capture();
  const worker = defineBatchWorker({
    name: 'bw-one-by-one',
    ...schedule,
    settings: { batchSize: 10, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({
        name: 'close',
        claim: async () => {
          throw new Error('the batch transaction rolled back');
        },
        oneByOne: {
          candidates: async (limit) => (await tdb.pool.query<{ id: string }>(`select id from ${q.table} where status = 'pending' order by id limit $1`, [limit])).rows.map((r) => r.id),
          claimOne: async (id) => {
            if (id === 'r00002') throw new Error('row 2 is broken');
            return (await tdb.pool.query<Row>(`update ${q.table} set status = 'done' where id = $1 returning id, n`, [id])).rows;
          },
        },
      }),
    ],
  });
  const counts = await worker.runOnce(context({ log }));
  assert.deepEqual(await q.statuses(), { done: 3, pending: 1 });
  assert.equal(counts.failed, 1);
  assert.ok(lines.some((l) => l.msg === 'batch failed, redoing its rows one by one' && l.rows === 4));

  const q2 = await queue(3);
  const allFail = defineBatchWorker({
    name: 'bw-all-fail',
    ...schedule,
    settings: { batchSize: 3, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({
        name: 'close',
        claim: async () => {
          throw new Error('database is read-only');
        },
        oneByOne: {
          candidates: async () => ['r00001', 'r00002', 'r00003'],
          claimOne: async () => {
            throw new Error('database is read-only');
          },
        },
      }),
    ],
  });
  const c2 = await allFail.runOnce(context({ log }));
  assert.equal(c2.batches, 1, 'the full batch of failures ended the phase instead of claiming again');
  assert.ok(lines.some((l) => l.msg === 'every row of the batch failed; phase stopped until the next tick' && l.phase === 'close'));
  assert.deepEqual(await q2.statuses(), { pending: 3 });
});

test('a drained phase takes a wake that arrived, or waits idleWaitMs for the next one, before it ends', async () => {
  const q = await queue(2);
  let woken = 1;
  let waits = 0;
  const worker = defineBatchWorker({
    name: 'bw-wake',
    ...schedule,
    settings: { batchSize: 10, maxRunMs: 60_000, idleWaitMs: 50 },
    phases: () => [batchPhase<Row>({ name: 'rows', claim: (limit) => q.claim(limit), record: (o) => q.record(o) })],
  });
  const counts = await worker.runOnce(
    context({
      woken: () => woken-- > 0,
      waitForWake: async (ms) => {
        assert.ok(ms <= 50);
        return ++waits === 1;
      },
    }),
  );
  // claim (2 rows) → woken → claim (0) → wait: woken → claim (0) → wait: nothing → end.
  assert.equal(waits, 2);
  assert.equal(counts.claimed, 2);
  assert.equal(counts.batches, 1, 'empty claims are not batches');
});

test('phases run in order on one deadline, and finish runs after them even when a phase throws', async () => {
  const order: string[] = [];
  const worker = defineBatchWorker({
    name: 'bw-phases',
    ...schedule,
    settings: { batchSize: 5, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({ name: 'a', claim: async () => (order.push('a'), []) }),
      batchPhase<Row>({
        name: 'b',
        claim: async () => {
          order.push('b');
          throw new Error('b is down');
        },
      }),
      batchPhase<Row>({ name: 'c', claim: async () => (order.push('c'), []) }),
    ],
    finish: async () => void order.push('finish'),
  });
  await assert.rejects(worker.runOnce(context()), /b is down/);
  assert.deepEqual(order, ['a', 'b', 'finish']);
});

test('concurrency bounds the rows processed at the same time', async () => {
  const q = await queue(12);
  let now = 0;
  let peak = 0;
  const worker = defineBatchWorker({
    name: 'bw-lanes',
    ...schedule,
    settings: { batchSize: 12, maxRunMs: 60_000, concurrency: 3 },
    phases: () => [
      batchPhase<Row>({
        name: 'rows',
        claim: (limit) => q.claim(limit),
        process: async () => {
          peak = Math.max(peak, ++now);
          await sleep(5);
          now--;
        },
        record: (o) => q.record(o),
      }),
    ],
  });
  await worker.runOnce(context());
  assert.equal(peak, 3);
  assert.deepEqual(await q.statuses(), { done: 12 });
});

test('invalid batch settings fail at start, once, in loadConfig, naming each (the worker takes them as they are)', () => {
  const bad = {
    USER_ACTIVITY_CLOSER_BATCH_SIZE: '0',
    MESSENGER_REALTIME_BATCH_SIZE: '0',
    USER_ACTIVITY_CLOSER_MAX_RUN_DURATION: '0s',
    MESSENGER_REALTIME_MAX_RUN_DURATION: '0s',
    IDENTITY_ACCESS_FANOUT_BATCH_SIZE: '0',
  };
  assert.throws(
    () => loadConfig(bad),
    (err: unknown) => err instanceof ConfigError && Object.keys(bad).every((name) => err.problems.some((p) => p.startsWith(`${name}:`))),
  );
});

test('under the runner, each batch is counted in job_batches_total and job_batch_rows_total by job and phase', async (t) => {
  const q = await queue(7);
  const r = startReplica(t, tdb);
  r.runner.register(
    defineBatchWorker({
      name: 'bw-metrics',
      ...schedule,
      settings: { batchSize: 5, maxRunMs: 60_000 },
      phases: () => [
        batchPhase<Row>({
          name: 'rows',
          claim: (limit) => q.claim(limit),
          process: async (row) => {
            if (row.n === 2) throw new Error('no');
          },
          record: (o) => q.record(o),
        }),
      ],
    }),
  );
  const result = await r.runner.runNow('bw-metrics');
  assert.equal(result.outcome, 'success');
  assert.deepEqual(result.counts, { batches: 2, claimed: 7, failed: 1, released: 0 });
  const series = async (name: string) => (await r.registry.getSingleMetric(name)!.get()).values.filter((v) => v.labels.job === 'bw-metrics');
  assert.deepEqual(
    (await series('job_batches_total')).map((v) => [v.labels.phase, v.value]),
    [['rows', 2]],
  );
  const rows = Object.fromEntries((await series('job_batch_rows_total')).map((v) => [v.labels.outcome, v.value]));
  assert.deepEqual(rows, { claimed: 7, failed: 1 });
  const runLines = r.logs.filter((l) => l.job === 'bw-metrics' && (l.msg === 'job completed' || l.msg === 'job run completed'));
  assert.deepEqual(runLines.map((l) => l.msg), ['job completed'], 'one line per run: the kernel\'s, not a second one from the runner');
  assert.equal(runLines[0]?.level, LEVEL.info, 'a run that did work logs at info');
  assert.equal(runLines[0]?.jobRunId, result.jobRunId);
});

test('a few failed rows get a line each; a batch where many failed (an outage downstream) gets one line', async () => {
  const q = await queue(8);
  const { log, lines } = capture();
  let refuse = 2;
  const worker = defineBatchWorker({
    name: 'bw-failure-lines',
    ...schedule,
    settings: { batchSize: 4, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({
        name: 'index',
        logFields: { adapter: 'search' },
        claim: (limit) => q.claim(limit),
        // One bulk request per batch: the first batch loses 2 documents, the second all 4.
        processBatch: async (rows) => {
          const out = rows.map((row, i) => (i < refuse ? { row, status: 'failed' as const, error: new Error('index refused') } : { row, status: 'done' as const, result: undefined }));
          refuse = 4;
          return out;
        },
        record: (o) => q.record(o),
      }),
    ],
  });
  const counts = await worker.runOnce(context({ log }));
  assert.equal(counts.failed, 6);
  const perRow = lines.filter((l) => l.msg === 'item failed');
  assert.deepEqual(perRow.map((l) => [l.id, l.adapter]), [['r00001', 'search'], ['r00002', 'search']]);
  const summary = lines.filter((l) => l.msg === 'items failed');
  assert.equal(summary.length, 1);
  assert.equal(summary[0]!.failed, 4);
  assert.deepEqual(summary[0]!.ids, ['r00005', 'r00006', 'r00007', 'r00008']);
});

test('a failure the job already reported in its own words is counted but gets no kernel line', async () => {
  const q = await queue(2);
  const { log, lines } = capture();
  const worker = defineBatchWorker({
    name: 'bw-reported',
    ...schedule,
    settings: { batchSize: 2, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({
        name: 'tasks',
        claim: (limit) => q.claim(limit),
        process: async (row) => {
          log.error({ taskId: row.id }, 'task failed');
          throw new ReportedError(`task ${row.id} failed`);
        },
        record: (o) => q.record(o),
      }),
    ],
  });
  const counts = await worker.runOnce(context({ log }));
  assert.equal(counts.failed, 2);
  assert.equal(lines.filter((l) => l.msg === 'task failed').length, 2);
  assert.equal(lines.filter((l) => l.msg === 'item failed' || l.msg === 'items failed').length, 0);
});
