import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { migrateDatabase, migrationParts, MIGRATIONS_DIR } from '../../../src/platform/db/index.ts';
import { createEmptyDatabase } from '../../support/db.ts';

/**
 * The push part's tables moved out of the messenger's schema (drizzle/push/0000): a database that
 * ran the migrations before the move, with rows in the outbox and the event stream, keeps them —
 * ids, positions, the sequence and the indexes — and a fresh database ends up with the same tables.
 */

const MOVE_STEP = '0014_realtime_tables_to_push';

/** The migrations as they were before the move: no push part, and the messenger's part without its last (no-op) step. */
function migrationsBeforeTheMove(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pin-before-push-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  rmSync(join(dir, 'push'), { recursive: true });
  const part = join(dir, 'messenger.realtime');
  const journal = JSON.parse(readFileSync(join(part, 'meta/_journal.json'), 'utf8')) as { entries: { tag: string }[] };
  journal.entries = journal.entries.filter((e) => e.tag !== MOVE_STEP);
  writeFileSync(join(part, 'meta/_journal.json'), JSON.stringify(journal));
  rmSync(join(part, `${MOVE_STEP}.sql`));
  return dir;
}

const OUTBOX_COLUMNS = `id, kind, target_kind, chat_id, target_user_id, message_id, ref_id, session_kind, seq, payload, status, attempts,
  next_attempt_at, last_error, created_at, updated_at, row_version, traceparent`;
const EVENT_COLUMNS = 'position, outbox_id, kind, target_kind, chat_id, target_user_id, message_id, ref_id, session_kind, seq, payload, membership_version, created_at, recorded_at';

/** Rows as an operator's deploy finds them: a pending message push, a quarantined one, a carried frame, and their stream events. */
async function writeRowsBeforeTheMove(pool: pg.Pool): Promise<void> {
  await pool.query(`insert into messenger.realtime_outbox (${OUTBOX_COLUMNS}) values
    ('01900000-0000-7000-8000-000000000001', 'MessageReceived', 'ChatGroup', '01900000-0000-7000-8000-0000000000c1', null,
     '01900000-0000-7000-8000-0000000000a1', null, null, 7, null, 'Pending', 1, '2026-01-01T00:00:05Z', null,
     '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', 3, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
    ('01900000-0000-7000-8000-000000000002', 'CallInvited', 'User', null, '01900000-0000-7000-8000-0000000000b1',
     null, '01900000-0000-7000-8000-0000000000d1', 'Direct', null, null, 'Quarantined', 8, '2026-01-01T00:01:00Z', 'RTO_ATTEMPTS_EXHAUSTED',
     '2026-01-01T00:00:10Z', '2026-01-01T00:01:00Z', 9, null),
    ('01900000-0000-7000-8000-000000000003', 'NotificationStatusChanged', 'User', null, '01900000-0000-7000-8000-0000000000b2',
     null, null, null, null, '{"NotificationId":"n1","Status":"Sent"}', 'Done', 1, '2026-01-01T00:00:30Z', null,
     '2026-01-01T00:00:20Z', '2026-01-01T00:00:21Z', 2, null)`);
  for (const [outboxId, kind, target, chat, user] of [
    ['01900000-0000-7000-8000-000000000001', 'MessageReceived', 'ChatGroup', '01900000-0000-7000-8000-0000000000c1', null],
    ['01900000-0000-7000-8000-000000000003', 'NotificationStatusChanged', 'User', null, '01900000-0000-7000-8000-0000000000b2'],
  ]) {
    await pool.query(
      `insert into messenger.realtime_events (position, outbox_id, kind, target_kind, chat_id, target_user_id, membership_version, created_at, recorded_at)
       values (nextval('messenger.realtime_event_position'), $1, $2, $3, $4, $5, 4, '2026-01-01T00:00:00Z', '2026-01-01T00:00:02Z')`,
      [outboxId, kind, target, chat, user],
    );
  }
  // Retention trimmed the stream's first positions once: the horizon moves with the rows.
  await pool.query(`update messenger.realtime_event_horizon set trimmed_below = 2 where id = 1`);
}

/** What the push schema holds, table by table: columns, constraints and indexes (names and definitions). */
async function shapeOfPush(pool: pg.Pool): Promise<unknown> {
  const { rows } = await pool.query(`
    select 'column' as what, table_name || '.' || column_name || ' ' || data_type || coalesce('(' || character_maximum_length || ')', '')
             || ' ' || is_nullable || ' ' || coalesce(column_default, '') as def
      from information_schema.columns where table_schema = 'push'
    union all
    select 'constraint', conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
      from pg_constraint where connamespace = 'push'::regnamespace
    union all
    select 'index', indexdef from pg_indexes where schemaname = 'push'
    union all
    select 'sequence', sequencename || ' ' || increment_by from pg_sequences where schemaname = 'push'
    order by 1, 2`);
  return rows;
}

test("no file of the push part names a module's schema or table: its statements use its own", () => {
  const dir = new URL('../../../src/platform/push/', import.meta.url);
  const modules = readdirSync(new URL('../../../src/modules/', import.meta.url), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name.replace(/-/g, '_'));
  const named = new RegExp(`\\b(${modules.join('|')})\\.[a-z_]+`, 'g');
  const found = readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .flatMap((f) => (readFileSync(new URL(f, dir), 'utf8').match(named) ?? []).map((m) => `${f}: ${m}`));
  assert.deepEqual(found, []);
});

test('the push part applies after every module part, so its move finds the tables on a fresh database too', () => {
  const parts = migrationParts();
  assert.equal(parts[0], 'platform');
  assert.equal(parts.at(-1), 'push');
  assert.ok(parts.includes('messenger.realtime') && parts.includes('notifications'));
});

test('migrating a database of before the move keeps the outbox rows, the stream positions, the sequence and the horizon', async () => {
  const before = await createEmptyDatabase({ poolMax: 2 });
  await migrateDatabase(before.pool, migrationsBeforeTheMove());
  await writeRowsBeforeTheMove(before.pool);
  const outboxBefore = (await before.pool.query(`select ${OUTBOX_COLUMNS} from messenger.realtime_outbox order by id`)).rows;
  const eventsBefore = (await before.pool.query(`select ${EVENT_COLUMNS} from messenger.realtime_events order by position`)).rows;

  await migrateDatabase(before.pool);

  assert.deepEqual((await before.pool.query(`select ${OUTBOX_COLUMNS} from push.realtime_outbox order by id`)).rows, outboxBefore);
  assert.deepEqual((await before.pool.query(`select ${EVENT_COLUMNS} from push.realtime_events order by position`)).rows, eventsBefore);
  assert.deepEqual(eventsBefore.map((e) => Number(e.position)), [1, 2]);
  // The sequence kept its value: the next position follows the last one handed out before the deploy.
  assert.equal((await before.pool.query(`select nextval('push.realtime_event_position')::int as p`)).rows[0].p, 3);
  assert.equal((await before.pool.query(`select trimmed_below::int as t from push.realtime_event_horizon`)).rows[0].t, 2);
  // Nothing of the push path is left in the messenger's schema but the seed's name, a view.
  const { rows: left } = await before.pool.query(`select relname, relkind from pg_class
     where relnamespace = 'messenger'::regnamespace and relname like 'realtime%' order by relname`);
  assert.deepEqual(left, [{ relname: 'realtime_outbox', relkind: 'v' }]);
  const { rows: fns } = await before.pool.query(`select pronamespace::regnamespace::text as schema from pg_proc where proname = 'realtime_record_outcomes'`);
  assert.deepEqual(fns, [{ schema: 'push' }]);

  // And a fresh database, which runs the same history and the move at once, has the same push schema.
  const fresh = await createEmptyDatabase({ poolMax: 2 });
  await migrateDatabase(fresh.pool);
  assert.deepEqual(await shapeOfPush(before.pool), await shapeOfPush(fresh.pool));
});

test('the kind check that listed the modules\' kinds is gone, and the target check stays', async () => {
  const db = await createEmptyDatabase({ poolMax: 1 });
  await migrateDatabase(db.pool);
  const { rows } = await db.pool.query(`select conname from pg_constraint where conrelid = 'push.realtime_outbox'::regclass and contype = 'c' order by conname`);
  assert.deepEqual(
    rows.map((r) => r.conname),
    ['ck_rto_attempts', 'ck_rto_status', 'ck_rto_target', 'ck_rto_target_kind'],
  );
});

test("seed 000's runbook SQL on messenger.realtime_outbox still reads and re-enqueues the push part's rows", async () => {
  const db = await createEmptyDatabase({ poolMax: 1 });
  await migrateDatabase(db.pool);
  // Written through the seed's name: the table's defaults apply (Pending, 0 attempts).
  await db.pool.query(`insert into messenger.realtime_outbox (id, kind, target_kind, target_user_id, next_attempt_at, created_at, updated_at)
    values ('01900000-0000-7000-8000-000000000009', 'BlacklistChanged', 'User', '01900000-0000-7000-8000-0000000000b9', now(), now(), now())`);
  await db.pool.query(`update push.realtime_outbox set status = 'Quarantined', attempts = 8, last_error = 'RTO_ATTEMPTS_EXHAUSTED'`);
  const { rows: seen } = await db.pool.query(`select status, last_error from messenger.realtime_outbox where status = 'Quarantined'`);
  assert.deepEqual(seen, [{ status: 'Quarantined', last_error: 'RTO_ATTEMPTS_EXHAUSTED' }]);
  // The seed's re-enqueue: Quarantined -> Pending, Attempts = 0.
  await db.pool.query(`update messenger.realtime_outbox set status = 'Pending', attempts = 0 where status = 'Quarantined'`);
  const { rows } = await db.pool.query(`select status, attempts from push.realtime_outbox`);
  assert.deepEqual(rows, [{ status: 'Pending', attempts: 0 }]);
});
