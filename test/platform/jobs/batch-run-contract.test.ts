import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchPhase, defineBatchWorker, type BatchRunContext } from '../../../src/platform/jobs/index.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { newId } from '../../../src/platform/time.ts';
import { LEVEL, type LogLine } from './support.ts';

/**
 * The parts of the job contract the kernel owns for every batch worker: the run's typed state,
 * the injected clocks, the run's start and end lines, its duration, error counter and backlog.
 * In-memory rows: the claim/process/record loop over PostgreSQL is batch-worker.test.ts's.
 */

interface Row {
  id: string;
}

const schedule = { every: 3_600_000 } as const;

function capture() {
  const lines: LogLine[] = [];
  const log = createLogger('debug', { write: (l: string) => void lines.push(JSON.parse(l) as LogLine) });
  return { log, lines };
}

/** A hand-moved monotonic clock: the kernel's deadlines and durations read it. */
function manualMonotonic() {
  let ms = 1_000;
  return { read: () => ms, advance: (by: number) => void (ms += by) };
}

function context(log = capture().log, overrides: Partial<BatchRunContext> = {}): BatchRunContext {
  return { jobRunId: newId(), signal: new AbortController().signal, log, now: () => new Date('2026-03-01T12:00:00Z'), ...overrides };
}

/** `n` rows handed out `limit` at a time. */
function rowsOf(n: number) {
  let next = 0;
  return (limit: number): Row[] => {
    const batch = Array.from({ length: Math.max(0, Math.min(limit, n - next)) }, (_, i) => ({ id: `r${next + i}` }));
    next += batch.length;
    return batch;
  };
}

test('start makes each run its own state; phases, backlog and finish get that same object', async () => {
  const seen: unknown[][] = [];
  const worker = defineBatchWorker<{ runNo: number }>({
    name: 'contract-state',
    ...schedule,
    settings: { batchSize: 5, maxRunMs: 60_000 },
    start: (run) => ({ runNo: seen.push([run.jobRunId]) }),
    phases: (_run, state) => {
      seen.at(-1)!.push(state);
      return [batchPhase<Row>({ name: 'p', claim: async () => [] })];
    },
    backlog: async (_run, state) => (seen.at(-1)!.push(state), 0),
    finish: async (_run, state) => void seen.at(-1)!.push(state),
  });

  await worker.runOnce(context());
  await worker.runOnce(context());

  assert.equal(seen.length, 2);
  for (const [i, [, ...states]] of seen.entries()) {
    assert.equal(states.length, 3);
    assert.ok(states.every((s) => s === states[0]), 'one object per run');
    assert.deepEqual(states[0], { runNo: i + 1 });
  }
});

test('the injected monotonic clock drives maxRunMs: moving it past the deadline ends the run after that batch', async () => {
  const clock = manualMonotonic();
  const next = rowsOf(20);
  const worker = defineBatchWorker({
    name: 'contract-deadline',
    ...schedule,
    settings: { batchSize: 5, maxRunMs: 60_000 },
    phases: () => [
      batchPhase<Row>({
        name: 'p',
        claim: async (limit) => next(limit),
        process: async () => clock.advance(7_000), // each row "takes" 7 s: the second batch crosses 60 s
      }),
    ],
  });

  const counts = await worker.runOnce(context(undefined, { monotonicMs: clock.read }));

  assert.equal(counts.batches, 2);
  assert.equal(counts.claimed, 10);
});

test('the kernel logs the run: job started at debug, at info once when work is found, job completed with counts, duration and the job\'s fields', async () => {
  const clock = manualMonotonic();
  const { log, lines } = capture();
  const next = rowsOf(3);
  const worker = defineBatchWorker<{ cutoff: string }>({
    name: 'contract-lines',
    ...schedule,
    settings: { batchSize: 2, maxRunMs: 60_000 },
    counts: ['handled'],
    start: () => ({ cutoff: '2026-03-01T11:48:00.000Z' }),
    runFields: (state) => ({ cutoff: state.cutoff }),
    phases: (run) => [
      batchPhase<Row>({
        name: 'p',
        claim: async (limit) => next(limit),
        process: async () => {
          run.count('handled');
          clock.advance(250);
        },
      }),
    ],
  });

  await worker.runOnce(context(log, { monotonicMs: clock.read }));

  const started = lines.filter((l) => l.msg === 'job started');
  assert.deepEqual(started.map((l) => [l.level, l.cutoff]), [
    [LEVEL.debug, '2026-03-01T11:48:00.000Z'],
    [LEVEL.info, '2026-03-01T11:48:00.000Z'],
  ]);
  const completed = lines.filter((l) => l.msg === 'job completed');
  assert.equal(completed.length, 1);
  assert.equal(completed[0]!.level, LEVEL.info);
  assert.equal(completed[0]!.handled, 3);
  assert.equal(completed[0]!.claimed, 3);
  assert.equal(completed[0]!.durationMs, 750);
  assert.equal(completed[0]!.cutoff, '2026-03-01T11:48:00.000Z');
  assert.equal(completed[0]!.aborted, false);
});

test('an idle run logs nothing at info: job started and job completed stay at debug', async () => {
  const { log, lines } = capture();
  const worker = defineBatchWorker({
    name: 'contract-idle',
    ...schedule,
    settings: { batchSize: 2, maxRunMs: 60_000 },
    phases: () => [batchPhase<Row>({ name: 'p', claim: async () => [] })],
  });

  await worker.runOnce(context(log));

  assert.deepEqual(
    lines.filter((l) => l.msg === 'job started' || l.msg === 'job completed').map((l) => [l.msg, l.level]),
    [
      ['job started', LEVEL.debug],
      ['job completed', LEVEL.debug],
    ],
  );
});

test('the kernel feeds the job\'s own metrics: run duration, one error per failed row by phase, the backlog it reports', async () => {
  const clock = manualMonotonic();
  const durations: number[] = [];
  const errors: [string, number][] = [];
  let gauge = -1;
  const next = rowsOf(4);
  const worker = defineBatchWorker({
    name: 'contract-metrics',
    ...schedule,
    settings: { batchSize: 10, maxRunMs: 60_000 },
    metrics: {
      durationMs: { observe: (ms) => void durations.push(ms) },
      errors: { inc: ({ phase }, n = 1) => void errors.push([phase, n]) },
      backlog: { set: (n) => void (gauge = n) },
    },
    phases: () => [
      batchPhase<Row>({
        name: 'p',
        claim: async (limit) => next(limit),
        process: async (row) => {
          clock.advance(100);
          if (row.id === 'r1' || row.id === 'r3') throw new Error(`row ${row.id} is bad`);
        },
      }),
    ],
    backlog: async () => 7,
  });

  const counts = await worker.runOnce(context(undefined, { monotonicMs: clock.read }));

  assert.deepEqual(durations, [400]);
  assert.deepEqual(errors, [['p', 2]]);
  assert.equal(gauge, 7);
  assert.equal(counts.backlogRemaining, 7);
  assert.equal(counts.failed, 2);
});
