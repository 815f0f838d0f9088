import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'drizzle-orm';
import { query } from '../../../src/platform/db/index.ts';
import { createTestDatabase } from '../../support/db.ts';

const t = await createTestDatabase({ poolMax: 2 });

test('query: timestamptz, timestamp and date columns come back as Date, as raw pg parses them', async () => {
  const at = new Date('2026-12-01T12:34:56.789Z');
  const { rows } = await query<{ tz: Date; plain: Date; day: Date; none: Date | null; tzs: Date[] }>(
    t.db,
    sql`select ${at}::timestamptz as tz, '2026-12-01 12:34:56.789'::timestamp as plain, '2026-12-01'::date as day,
               null::timestamptz as none, array[${at}::timestamptz] as tzs`,
  );
  const raw = (await t.pool.query(`select '2026-12-01 12:34:56.789'::timestamp as plain, '2026-12-01'::date as day`)).rows[0];
  assert.ok(rows[0]!.tz instanceof Date);
  assert.equal(rows[0]!.tz.toISOString(), at.toISOString());
  assert.equal(rows[0]!.plain.getTime(), raw.plain.getTime());
  assert.equal(rows[0]!.day.getTime(), raw.day.getTime());
  assert.equal(rows[0]!.none, null);
  assert.equal(rows[0]!.tzs[0]!.toISOString(), at.toISOString());
});

test('query: an array bound with sql.param is one parameter, and rowCount counts the rows written', async () => {
  await query(t.db, sql`create temporary table q_items (id int primary key)`);
  const ids = [1, 2, 3];
  const inserted = await query(t.db, sql`insert into q_items select unnest(${sql.param(ids)}::int[])`);
  assert.equal(inserted.rowCount, 3);
  const { rows } = await query<{ n: number }>(t.db, sql`select count(*)::int as n from q_items where id = any(${sql.param([2, 3])}::int[])`);
  assert.equal(rows[0]!.n, 2);
});

test('query: inside a transaction it runs on the transaction, and a failure rolls it back', async () => {
  await query(t.db, sql`create table q_tx (id int primary key)`);
  await assert.rejects(
    t.db.transaction(async (tx) => {
      await query(tx, sql`insert into q_tx values (1)`);
      await query(tx, sql`insert into q_tx values (1)`);
    }),
    (err: unknown) => (err as { cause?: { code?: string } }).cause?.code === '23505' || (err as { code?: string }).code === '23505',
  );
  const { rows } = await query<{ n: number }>(t.db, sql`select count(*)::int as n from q_tx`);
  assert.equal(rows[0]!.n, 0);
});

test('query: a named statement is prepared once per connection, in a transaction too, with the same types', async () => {
  const named = (at: Date) => sql`select ${at}::timestamptz as at, pg_backend_pid() as pid`;
  const first = new Date('2026-12-01T00:00:00.000Z');
  const second = new Date('2026-12-02T00:00:00.000Z');
  await t.db.transaction(async (tx) => {
    const a = await query<{ at: Date; pid: number }>(tx, named(first), { name: 'q_named' });
    const b = await query<{ at: Date; pid: number }>(tx, named(second), { name: 'q_named' });
    assert.equal(a.rows[0]!.at.toISOString(), first.toISOString());
    assert.equal(b.rows[0]!.at.toISOString(), second.toISOString());
    const { rows } = await query<{ n: number }>(tx, sql`select count(*)::int as n from pg_prepared_statements where name = 'q_named'`);
    assert.equal(rows[0]!.n, 1);
  });
});
