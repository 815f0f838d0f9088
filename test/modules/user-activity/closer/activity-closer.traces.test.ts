import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestTracing } from '../../../support/tracing.ts';
import { createTestDatabase } from '../../../support/db.ts';
import { createDb } from '../../../../src/platform/db/index.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { ACTIVITY_CLOSER_JOB, createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../../src/modules/user-activity/closer/activity-closer.ts';
import { startReplica } from '../../../platform/jobs/support.ts';
import { installCloseFailures, MIN, seedSession, seedView } from '../support.ts';

/**
 * Seed 001 "Traces": a span per run with jobRunId; phase, batchSize and closedCount on the spans
 * below it; a span per session transaction. A batch closes its sessions in ONE transaction, so the
 * batch span is that transaction's span; a batch redone session by session (one failed) has one
 * `stale_sessions row` span per session, each its own transaction.
 */

const tracing = await startTestTracing();
const tdb = await createTestDatabase();
const failures = await installCloseFailures(tdb.pool);

async function staleSession(): Promise<string> {
  const lastActivityAt = new Date(Date.now() - 13 * MIN);
  const sessionId = await seedSession(tdb.pool, { createdAt: new Date(Date.now() - 40 * MIN), lastActivityAt });
  await seedView(tdb.pool, { sessionId, createdAt: new Date(Date.now() - 30 * MIN), lastActivityAt });
  return sessionId;
}

test('closer spans: run with jobRunId, a batch span (one transaction) with phase, batchSize and closedCount, a row span per session when a batch is redone', async (t) => {
  const replica = startReplica(t, tdb);
  replica.runner.register(createActivityCloser({ db: createDb(replica.pool), registry: new Registry(), settings: DEFAULT_CLOSER_SETTINGS }));

  await staleSession();
  await staleSession();
  assert.equal((await replica.runner.runNow(ACTIVITY_CLOSER_JOB)).outcome, 'success');
  const run = tracing.one(`${ACTIVITY_CLOSER_JOB} run`);
  assert.ok(run.attributes.jobRunId, 'the run span carries its jobRunId');
  const batch = tracing.one(`${ACTIVITY_CLOSER_JOB} batch`, (s) => s.attributes.phase === 'stale_sessions' && s.attributes.claimed === 2);
  assert.equal(batch.parentSpanContext?.spanId, run.spanContext().spanId);
  assert.deepEqual(
    { jobRunId: batch.attributes.jobRunId, batchSize: batch.attributes.batchSize, closedCount: batch.attributes.closedCount },
    { jobRunId: run.attributes.jobRunId, batchSize: DEFAULT_CLOSER_SETTINGS.USER_ACTIVITY_CLOSER_BATCH_SIZE, closedCount: 4 },
    'two sessions and their two views closed in the batch',
  );

  tracing.reset();
  const ok = await staleSession();
  const bad = await staleSession();
  await failures.failOn(bad);
  await replica.runner.runNow(ACTIVITY_CLOSER_JOB);
  const redone = tracing.one(`${ACTIVITY_CLOSER_JOB} batch`, (s) => s.attributes.phase === 'stale_sessions' && s.attributes.claimed !== 0);
  const rows = tracing.childrenOf(redone).filter((s) => s.name === 'stale_sessions row');
  assert.deepEqual(rows.map((s) => s.attributes.id).sort(), [ok, bad].sort(), 'one span per session transaction');
  assert.deepEqual(
    rows.map((s) => [s.attributes.id, s.status.code]).sort(),
    [
      [ok, 0],
      [bad, 2],
    ].sort(),
    'the failed session transaction is the span in error',
  );
});
