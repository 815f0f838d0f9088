import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drizzle } from 'drizzle-orm/node-postgres';
import { waitFor } from '../../support/wait.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { enqueue } from '../../../src/platform/outbox/enqueue.ts';
import { FIRST_ID, markPublished, selectPendingAfter } from '../../../src/platform/outbox/sql.ts';

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

test("a pass from the first pending row skips published rows' index entries without reading their heap pages", async () => {
  // An index entry is marked dead only when no snapshot in this database can still see its row:
  // an autovacuum analyze of this table (due after 2,000 inserts) holds one, so it is kept away.
  await t.pool.query('alter table platform.outbox set (autovacuum_enabled = off)');
  // 2,000 published rows of ~1 KB (the heap spans hundreds of pages), then 3 pending ones.
  const body = { pad: 'x'.repeat(1000) };
  const published = await t.db.transaction((tx) => enqueue(tx, Array.from({ length: 2000 }, (_, i) => ({ ...event(i), payload: body }))));
  const pending = await t.db.transaction((tx) => enqueue(tx, [event(-1), event(-2), event(-3)]));
  await markPublished(t.db, published, new Date());
  // The mark commits without waiting for its WAL flush, and until that flush no reader may set the
  // hint bit (xmax committed) that lets a scan mark the old rows' index entries dead: under load the
  // WAL writer can be later than the first pass. A synchronous commit flushes the WAL up to it.
  await t.pool.query('select pg_current_xact_id()');
  const client = await t.pool.connect();
  try {
    const db = drizzle(client);
    await waitFor('no other backend of this database holding a snapshot', async () => {
      const { rows } = await client.query(`select 1 from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_xmin is not null`);
      return rows.length === 0;
    });
    // A pass that meets the dead entries marks them so, once no snapshot can see their rows; the
    // passes after it read no heap page of a published row. On a loaded machine the first pass may
    // come too early for that (a late WAL flush, a passing snapshot): up to four passes, until one
    // reads none. A bitmap scan never marks them: every pass reads them all (286); more than five
    // and the function's query would turn to its generic plan, whatever its settings.
    const reads: number[] = [];
    let others: unknown[] = [];
    while (reads.length < 4 && !(reads.length > 0 && reads.at(-1)! <= 5)) {
      // Counters not yet reported (this connection's earlier statements) go out when this one ends.
      await client.query('select pg_stat_force_next_flush()');
      await client.query('begin');
      assert.deepEqual((await selectPendingAfter(db, FIRST_ID, 100)).map((r) => r.id), pending);
      // This transaction's own heap block reads of platform.outbox.
      const { rows } = await client.query<{ hit: number }>(`select pg_stat_get_xact_blocks_hit('platform.outbox'::regclass)::int as hit`);
      await client.query('commit');
      reads.push(rows[0]!.hit);
      // Who else held a snapshot in this database meanwhile (what keeps entries from being marked dead).
      others = (await client.query(`select backend_type, state, backend_xmin, backend_xid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_xmin is not null`)).rows;
      if (reads.at(-1)! > 5) await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(reads.at(-1)! <= 5, `heap blocks read by each pass: ${reads.join(', ')}; other backends holding a snapshot: ${JSON.stringify(others)}`);
  } finally {
    client.release();
  }
});
