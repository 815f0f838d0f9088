import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drizzle } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import { claimDue, recordOutcomes } from '../../../../src/modules/messenger/realtime-dispatch/claim.ts';
import { newId } from '../../../../src/platform/time.ts';
import { createTestDatabase } from '../../../support/db.ts';

const T0 = new Date('2026-03-01T12:00:00Z');

/**
 * A backlog after an outage: many rows Pending, behind the Done rows retention still keeps (first in
 * id order). A claim and an outcome must cost about their batch, not the backlog or the history:
 * a claim that walked the primary key past the Done rows took 590 ms with 100,000 Pending behind
 * 500,000 Done; an outcome that read every Pending row took 200 ms a batch behind 70,000.
 */

/** Blocks of the outbox table and its indexes read so far in the current transaction of `client`. */
const blocksRead = async (client: pg.PoolClient): Promise<number> =>
  (
    await client.query<{ hit: number }>(
      `select sum(pg_stat_get_xact_blocks_hit(c.oid))::int as hit from pg_class c
        where c.oid = 'push.realtime_outbox'::regclass
           or c.oid in (select indexrelid from pg_index where indrelid = 'push.realtime_outbox'::regclass)`,
    )
  ).rows[0]!.hit;

test('a claim reads as much with 100,000 Done rows before the Pending ones as with 10,000, and takes rows in insertion order', async () => {
  const database = await createTestDatabase();
  const { pool } = database;
  // 120,000 rows written as the owners write them (Pending, due at their write time, ids in that
  // order); the oldest are then pushed (Done, as their outcomes leave them) and vacuumed.
  const ids = Array.from({ length: 120_000 }, () => newId());
  await pool.query(
    `insert into push.realtime_outbox (id, kind, target_kind, target_user_id, ref_id, next_attempt_at, created_at, updated_at)
     select i, 'ContactRemoved', 'User', gen_random_uuid(), gen_random_uuid(), $2::timestamptz + o * interval '1 millisecond', $2, $2
       from unnest($1::uuid[]) with ordinality t(i, o)`,
    [ids, new Date(T0.getTime() - 3_600_000)],
  );
  /** Marks the first `done` rows Done, then claims 64: the rows, and the blocks of the table and its indexes the claim read. */
  const claimAfter = async (done: number) => {
    await pool.query(`update push.realtime_outbox set status = 'Done' where id = any($1::uuid[])`, [ids.slice(0, done)]);
    await pool.query('vacuum analyze push.realtime_outbox');
    const client = await pool.connect();
    try {
      // Counters not yet reported (this connection's earlier statements) go out when this one ends.
      await client.query('select pg_stat_force_next_flush()');
      await client.query('begin');
      const rows = await claimDue(drizzle(client), { now: T0, limit: 64, maxAttempts: 8, delaysMs: [1000], jitter: 0 });
      const blocks = await blocksRead(client);
      await client.query('commit');
      return { ids: rows.map((r) => r.id), blocks };
    } finally {
      client.release();
    }
  };
  const short = await claimAfter(10_000);
  const long = await claimAfter(100_000);

  assert.deepEqual(short.ids, ids.slice(10_000, 10_064), 'the first 64 Pending rows, in insertion order');
  assert.deepEqual(long.ids, ids.slice(100_000, 100_064));
  // A claim ordered by id alone walked the primary key past the Done rows: 1,040 blocks, then 3,444.
  assert.ok(long.blocks <= short.blocks * 1.3, `blocks read by a claim: ${short.blocks} behind 10,000 Done rows, ${long.blocks} behind 100,000`);
});

test('an outcome reads about its batch behind a large Pending backlog, on a connection that recorded outcomes while the table was nearly empty', async () => {
  const database = await createTestDatabase();
  const { pool } = database;
  // Statistics as a fresh deployment's autovacuum last saw the table: a few rows, nothing Pending.
  await pool.query('alter table push.realtime_outbox set (autovacuum_enabled = false)');
  const insert = async (n: number, status: string) => {
    const ids = Array.from({ length: n }, () => newId());
    await pool.query(
      `insert into push.realtime_outbox (id, kind, target_kind, target_user_id, ref_id, status, next_attempt_at, created_at, updated_at)
       select i, 'ContactRemoved', 'User', gen_random_uuid(), gen_random_uuid(), $2, $3, $3, $3 from unnest($1::uuid[]) i`,
      [ids, status, T0],
    );
    return ids;
  };
  const outcome = (ids: string[]) => ids.map((id) => ({ id, rowVersion: 0, status: 'Done' as const, lastError: null, attemptsDelta: 0, nextAttemptAt: null }));
  const early = await insert(20, 'Pending');
  await pool.query('analyze push.realtime_outbox');

  const client = await pool.connect();
  try {
    // The dispatcher's connection records outcomes while the table is small (a prepared statement
    // would settle on its generic plan here: a sequential scan of a one-page table).
    for (const id of early) await recordOutcomes(drizzle(client), outcome([id]), T0);
    const pending = await insert(150_000, 'Pending');
    const batch = pending.slice(75_000, 75_100);
    await client.query('select pg_stat_force_next_flush()');
    await client.query('begin');
    const landed = await recordOutcomes(drizzle(client), outcome(batch), T0);
    const blocks = await blocksRead(client);
    await client.query('commit');
    assert.equal(landed.size, 100);
    // 100 rows found by id and updated read some hundreds of blocks; a scan of the table or of every Pending row, thousands.
    assert.ok(blocks <= 1_500, `blocks read by the outcome: ${blocks}`);
    const { rows } = await pool.query<{ status: string; n: number }>(
      `select status, count(*)::int as n from push.realtime_outbox where id = any($1::uuid[]) group by status`,
      [batch],
    );
    assert.deepEqual(rows, [{ status: 'Done', n: 100 }]);
  } finally {
    client.release();
  }
});

test('ix_rto_chat holds Quarantined rows only: rows written and claimed (Pending) or recorded Done add no entry to it', async () => {
  const database = await createTestDatabase();
  const { pool } = database;
  /** The index's live entries, as vacuum counts them. */
  const entries = async (): Promise<number> => {
    await pool.query('vacuum push.realtime_outbox');
    const { rows } = await pool.query<{ tuples: number }>(`select reltuples::int as tuples from pg_class where oid = 'push.ix_rto_chat'::regclass`);
    return rows[0]!.tuples;
  };
  const chatId = newId();
  const ids = Array.from({ length: 400 }, () => newId());
  await pool.query(
    `insert into push.realtime_outbox (id, kind, target_kind, chat_id, message_id, seq, next_attempt_at, created_at, updated_at)
     select i, 'MessageReceived', 'ChatGroup', $2, gen_random_uuid(), o, $3, $3, $3 from unnest($1::uuid[]) with ordinality t(i, o)`,
    [ids, chatId, T0],
  );
  const claimed = await claimDue(drizzle(pool), { now: T0, limit: 400, maxAttempts: 8, delaysMs: [1000], jitter: 0 });
  assert.equal(claimed.length, 400);
  // 400 Pending rows of a chat, each written and claimed: an index of live rows held 400 entries here.
  assert.equal(await entries(), 0);
  // Half recorded Done, half Quarantined (as a poison row's outcome leaves it).
  const landed = await recordOutcomes(
    drizzle(pool),
    claimed.map((r, i) => ({ id: r.id, rowVersion: r.rowVersion, status: i % 2 === 0 ? ('Done' as const) : ('Quarantined' as const), lastError: null, attemptsDelta: 0, nextAttemptAt: null })),
    T0,
  );
  assert.equal(landed.size, 400);
  assert.equal(await entries(), 200);
});
