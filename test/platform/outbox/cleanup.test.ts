import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { outboxCleanupJob } from '../../../src/platform/outbox/cleanup.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../src/platform/time.ts';
import { ConfigError, loadConfig } from '../../../src/config.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const t: TestDatabase = await createTestDatabase();

const clock = new ManualClock('2026-03-01T12:00:00Z');
const ctx = () => ({ jobRunId: newId(), signal: new AbortController().signal, log: createLogger('silent'), now: () => clock.now() });

async function outboxRow(publishedAt: string | null): Promise<string> {
  const [id] = await t.db.transaction((tx) =>
    enqueue(tx, {
      topic: 'pin.identity.access.v1',
      eventType: 'UserAccessChangedKafkaEvent',
      aggregateType: 'User',
      aggregateId: 'u1',
      occurredAt: '2026-03-01T00:00:00Z',
      payload: {},
    }),
  );
  await t.pool.query(`update platform.outbox set published_at = $2 where id = $1`, [id, publishedAt]);
  return id!;
}

describe('outbox cleanup', () => {
  test('deletes published rows past the retention in chunks; keeps recent and unpublished rows', async () => {
    const old = await Promise.all([1, 2, 3, 4, 5].map(() => outboxRow('2026-02-27T11:00:00Z'))); // 49 h old
    const recent = await outboxRow('2026-03-01T11:00:00Z'); // 1 h old
    const pending = await outboxRow(null);
    const result = await outboxCleanupJob({ db: t.db, settings: { outboxRetentionMs: 24 * 3_600_000, inboxRetentionMs: 7 * 86_400_000, batchSize: 2 } }).runOnce(ctx());
    assert.equal(result.outboxDeleted, 5);
    const { rows } = await t.pool.query(`select id from platform.outbox order by id`);
    assert.deepEqual(rows.map((r) => r.id).sort(), [recent, pending].sort());
    for (const id of old) assert.ok(!rows.some((r) => r.id === id));
  });

  test('deletes inbox rows older than the inbox retention only', async () => {
    await t.pool.query(
      `insert into platform.inbox (idempotency_key, consumer, processed_at) values
         ('c:old1', 'c', '2026-02-20T00:00:00Z'), ('c:old2', 'c', '2026-02-21T00:00:00Z'), ('c:new', 'c', '2026-02-28T00:00:00Z')`,
    );
    const result = await outboxCleanupJob({ db: t.db, settings: { outboxRetentionMs: 24 * 3_600_000, inboxRetentionMs: 7 * 86_400_000 } }).runOnce(ctx());
    assert.equal(result.inboxDeleted, 2);
    const { rows } = await t.pool.query(`select idempotency_key from platform.inbox`);
    assert.deepEqual(rows.map((r) => r.idempotency_key), ['c:new']);
  });

  test('the job is a single runner; its retentions are fixed: setting the old names (any value) fails start-up (loadConfig)', () => {
    const job = outboxCleanupJob({ db: t.db, settings: { outboxRetentionMs: 24 * 3_600_000, inboxRetentionMs: 7 * 86_400_000 } });
    assert.equal(job.singleRunner, true);
    assert.ok(job.every && job.every > 0);
    for (const name of ['OUTBOX_RETENTION', 'INBOX_RETENTION']) {
      assert.throws(() => loadConfig({ [name]: '0s' }), (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith(`${name}:`)), name);
    }
  });
});
