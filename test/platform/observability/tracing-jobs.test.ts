import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestTracing } from '../../support/tracing.ts';
import { createTestDatabase } from '../../support/db.ts';
import { batchPhase, defineBatchWorker } from '../../../src/platform/jobs/index.ts';
import { spanAttributes } from '../../../src/platform/observability/index.ts';
import { startReplica } from '../jobs/support.ts';

/**
 * The job kernel's spans (seed "Traces" sections): a span per run with jobRunId, a child per batch
 * with phase, batchSize and the batch's counts, a child per row where the phase names its row span,
 * the row's SQL under it (pg instrumentation), and the trace ids on the run's log lines.
 */

const tracing = await startTestTracing();
const tdb = await createTestDatabase();

test('a run span, a child per batch with its counts, a child per row with the attributes the phase names, its SQL under the row', async (t) => {
  const replica = startReplica(t, tdb);
  let queue = ['a', 'b', 'c'];
  const job = defineBatchWorker({
    name: 'traced-job',
    every: 3_600_000,
    settings: { batchSize: 2, maxRunMs: 10_000 },
    counts: ['pushed'],
    phases: () => [
      batchPhase<{ id: string; kind: string }, void>({
        name: 'rows',
        claim: async (limit) => {
          const taken = queue.slice(0, limit);
          queue = queue.slice(limit);
          return taken.map((id) => ({ id, kind: `Kind-${id}` }));
        },
        traceRow: { name: 'push', attributes: (r) => ({ Kind: r.kind, rowId: r.id }) },
        async process(row, run) {
          await replica.pool.query('select $1::text as pushed', [row.id]);
          spanAttributes({ late: `after-${row.id}` });
          run.count('pushed');
        },
      }),
    ],
  });
  replica.runner.register(job);
  const result = await replica.runner.runNow('traced-job');
  assert.equal(result.outcome, 'success');

  const run = tracing.one('traced-job run');
  assert.equal(run.parentSpanContext, undefined, 'the run starts a trace');
  assert.deepEqual(
    { jobRunId: run.attributes.jobRunId, job: run.attributes.job, outcome: run.attributes.outcome, claimed: run.attributes.claimed, pushed: run.attributes.pushed },
    { jobRunId: result.jobRunId, job: 'traced-job', outcome: 'success', claimed: 3, pushed: 3 },
  );
  const batches = tracing.childrenOf(run).filter((s) => s.name === 'traced-job batch');
  assert.deepEqual(
    batches.map((b) => ({ phase: b.attributes.phase, batchSize: b.attributes.batchSize, claimed: b.attributes.claimed, pushed: b.attributes.pushed })),
    [
      { phase: 'rows', batchSize: 2, claimed: 2, pushed: 2 },
      { phase: 'rows', batchSize: 2, claimed: 1, pushed: 1 },
    ],
  );
  const rows = batches.flatMap((b) => tracing.childrenOf(b));
  assert.deepEqual(
    rows.map((r) => ({ name: r.name, Kind: r.attributes.Kind, rowId: r.attributes.rowId, late: r.attributes.late })),
    ['a', 'b', 'c'].map((id) => ({ name: 'push', Kind: `Kind-${id}`, rowId: id, late: `after-${id}` })),
  );
  for (const row of rows) {
    const sql = tracing.childrenOf(row).map((s) => String(s.attributes['db.query.text'] ?? s.attributes['db.statement'] ?? s.name));
    assert.ok(sql.includes('select $1::text as pushed'), `the row query is a child of its row span: ${sql.join(' | ')}`);
  }
  for (const s of [run, ...batches, ...rows]) assert.equal(s.spanContext().traceId, run.spanContext().traceId);

  const done = replica.logs.find((l) => l.msg === 'job completed' && l.jobRunId === result.jobRunId);
  assert.equal(done?.trace_id, run.spanContext().traceId, 'the run log line carries its trace id');
  assert.equal(done?.span_id, run.spanContext().spanId);
});

test('a failed batch redone one row at a time: a span per redone row; a failing run is marked ERROR', async (t) => {
  tracing.reset();
  const replica = startReplica(t, tdb);
  const job = defineBatchWorker({
    name: 'traced-redo',
    every: 3_600_000,
    settings: { batchSize: 10, maxRunMs: 10_000 },
    phases: () => {
      let claimedOnce = false;
      return [
        batchPhase<{ id: string }>({
          name: 'sessions',
          claim: async () => {
            if (claimedOnce) return [];
            claimedOnce = true;
            throw new Error('batch transaction failed');
          },
          oneByOne: {
            candidates: async () => ['s1', 's2'],
            claimOne: async (key) => [{ id: key }],
          },
        }),
      ];
    },
  });
  const failing = defineBatchWorker({
    name: 'traced-failure',
    every: 3_600_000,
    settings: { batchSize: 10, maxRunMs: 10_000 },
    phases: () => [batchPhase<{ id: string }>({ name: 'boom', claim: async () => Promise.reject(new Error('database down')) })],
  });
  replica.runner.register(job);
  replica.runner.register(failing);
  await replica.runner.runNow('traced-redo');
  const batch = tracing.one('traced-redo batch', (s) => s.attributes.claimed === 2);
  assert.deepEqual(
    tracing.childrenOf(batch).map((s) => [s.name, s.attributes.id]),
    [
      ['sessions row', 's1'],
      ['sessions row', 's2'],
    ],
  );

  const result = await replica.runner.runNow('traced-failure');
  assert.equal(result.outcome, 'failure');
  const run = tracing.one('traced-failure run');
  assert.equal(run.status.code, 2, 'ERROR');
  assert.equal(run.attributes.outcome, 'failure');
  const failedBatch = tracing.one('traced-failure batch');
  assert.equal(failedBatch.status.code, 2);
  assert.equal(failedBatch.events[0]?.attributes?.['exception.message'], 'database down');
});
