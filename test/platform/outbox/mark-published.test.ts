import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drizzle } from 'drizzle-orm/node-postgres';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { markPublished } from '../../../src/platform/outbox/sql.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const t: TestDatabase = await createTestDatabase();

const event = (i: number) => ({ topic: 'pin.test.v1', eventType: 'E', aggregateType: 'A', aggregateId: `a${i}`, occurredAt: '2026-03-01T00:00:00Z', payload: {} });

test('the mark commits without waiting for a WAL flush, for its own transaction only; a published row is not marked again', async () => {
  const ids = await t.db.transaction((tx) => enqueue(tx, [event(1), event(2)]));
  const client = await t.pool.connect();
  try {
    // One backend seen from both sides: the mark runs on it, and its setting is read on it.
    const db = drizzle(client);
    const setting = async () => (await client.query<{ synchronous_commit: string }>('show synchronous_commit')).rows[0]!.synchronous_commit;
    await client.query('set synchronous_commit = on');
    await client.query('begin');
    assert.equal(await markPublished(db, ids, new Date()), 2);
    assert.equal(await setting(), 'off', "inside the mark's transaction");
    await client.query('commit');
    assert.equal(await setting(), 'on', 'the connection keeps its own setting');
    assert.equal(await markPublished(db, ids, new Date()), 0);
  } finally {
    client.release();
  }
});
