import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { pendingStats } from '../../../src/platform/outbox/sql.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const t: TestDatabase = await createTestDatabase();

async function pendingRows(n: number): Promise<string[]> {
  return t.db.transaction((tx) =>
    enqueue(
      tx,
      Array.from({ length: n }, (_, i) => ({
        topic: 'pin.test.v1',
        eventType: 'E',
        aggregateType: 'A',
        aggregateId: `a${i}`,
        occurredAt: '2026-03-01T00:00:00Z',
        payload: {},
      })),
    ),
  );
}

test('the pending gauge counts unpublished rows up to its cap; the oldest age is that of the first pending row', async () => {
  const [first, second, , fourth] = await pendingRows(4);
  await t.pool.query(`update platform.outbox set created_at = now() - interval '1 hour' where id = $1`, [first]);
  await t.pool.query(`update platform.outbox set created_at = now() - interval '2 hours' where id = $1`, [fourth]);
  await t.pool.query(`update platform.outbox set published_at = now() where id = $1`, [second]);

  const all = await pendingStats(t.db);
  assert.equal(all.pending, 3);
  // The first pending id (UUIDv7 order) stands for the oldest: ~1 h, read from the index, not min() over all.
  assert.ok(all.oldestAgeSeconds >= 3600 && all.oldestAgeSeconds < 3700, String(all.oldestAgeSeconds));
  assert.equal((await pendingStats(t.db, 2)).pending, 2);

  await t.pool.query(`update platform.outbox set published_at = now() where id = $1`, [first]);
  assert.ok((await pendingStats(t.db)).oldestAgeSeconds < 3600, 'the next pending row now heads the queue');
});
