import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { CONTACT_SEARCH_WAKE_CHANNEL, firstInTransaction } from './replica-sql.ts';
import type { BatchState, KnownRow, RowWrite } from './batch-plan.ts';

/**
 * SQL of the batch path: one statement reads what planning needs for the whole batch, one writes
 * the planned rows (with their search-queue rows and superseded conflicts), over the consumer's
 * transaction, as named prepared statements.
 */

/**
 * The replica rows of `userIds`, the live holders of `phones`, and which of those phones (or the
 * rows' current ones, which a write may let go of) an open conflict waits for.
 */
export async function readBatchState(tx: Db, userIds: readonly string[], phones: readonly string[]): Promise<BatchState> {
  const list = sql`${sql.param(phones)}::varchar[]`;
  const { rows: [r] } = await query<{ rows: [string, string | null, boolean, number, number][]; holders: [string, string][]; wanted: string[] }>(
    tx,
    sql`with cur as (
       select id, phone_number, is_active, identity_user_version, revision from messenger.users where id = any(${sql.param(userIds)}::uuid[])
     )
     select
       (select coalesce(json_agg(json_build_array(id, phone_number, is_active, identity_user_version, revision)), '[]') from cur) as rows,
       (select coalesce(json_agg(json_build_array(phone_number, id)), '[]')
          from messenger.users where is_active and phone_number = any(${list})) as holders,
       -- One = ANY over both lists: an index lookup per phone (with an OR of the two, the
       -- planner reads every open conflict and filters).
       (select coalesce(json_agg(distinct phone_number), '[]')
          from messenger.user_phone_conflicts
         where status = 'Open'
           and phone_number = any(${list} || array(select phone_number from cur where phone_number is not null))) as wanted`,
    { name: 'messenger_user_batch_read' },
  );
  const rows = new Map<string, KnownRow>();
  for (const [id, phoneNumber, isActive, version, revision] of r!.rows) rows.set(id, { phoneNumber, isActive, version, revision });
  return { rows, liveHolders: new Map(r!.holders), wantedPhones: new Set(r!.wanted) };
}

/**
 * Creates and updates the planned rows in one statement: a create writes nothing if the id or its
 * live phone got taken meanwhile (ON CONFLICT DO NOTHING), an update nothing if the row's
 * revision moved since it was read. Queues the search documents, supersedes the updated users'
 * open conflicts (their phone is applied), wakes the indexer on commit. Returns how many rows
 * were written: fewer than planned means the batch must be redone message by message.
 */
export async function writeBatch(tx: Db, writes: readonly RowWrite[], now: Date): Promise<number> {
  if (writes.length === 0) return 0;
  const col = <T>(f: (w: RowWrite) => T, type: string) => sql`${sql.param(writes.map(f))}::${sql.raw(type)}[]`;
  const at = sql`${now}::timestamptz`;
  const { rows: [r] } = await query<{ written: number }>(
    tx,
    sql`with d as (
       select * from unnest(${col((w) => w.snapshot.userId, 'uuid')}, ${col((w) => w.snapshot.firstName, 'varchar')}, ${col((w) => w.snapshot.middleName, 'varchar')},
                            ${col((w) => w.snapshot.lastName, 'varchar')}, ${col((w) => w.snapshot.phoneNumber, 'varchar')}, ${col((w) => w.snapshot.isActive, 'boolean')},
                            ${col((w) => w.snapshot.version, 'bigint')}, ${col((w) => w.writes, 'bigint')}, ${col((w) => w.expectedRevision, 'bigint')})
         as d(id, first_name, middle_name, last_name, phone_number, is_active, version, writes, expected_revision)
     ),
     ins as (
       insert into messenger.users
         (id, first_name, middle_name, last_name, phone_number, is_active, identity_user_version, revision, created_at, updated_at)
       select id, first_name, middle_name, last_name, phone_number, is_active, version, writes, ${at}, ${at}
         from d where expected_revision is null
       on conflict do nothing
       returning id, revision
     ),
     upd as (
       update messenger.users u
          set first_name = d.first_name, middle_name = d.middle_name, last_name = d.last_name, phone_number = d.phone_number,
              is_active = d.is_active, identity_user_version = d.version, revision = u.revision + d.writes, updated_at = ${at}
         from d
        -- The = ANY drives the update through the primary key: the planner cannot see how few rows
        -- unnest yields and otherwise hashes a sequential scan of the whole replica per batch.
        where u.id = any(${sql.param(writes.filter((w) => w.expectedRevision !== null).map((w) => w.snapshot.userId))}::uuid[])
          and u.id = d.id and u.revision = d.expected_revision
       returning u.id, u.revision
     ),
     w as (select id, revision from ins union all select id, revision from upd),
     pending as (
       insert into messenger.contact_search_pending (user_id, revision, enqueued_at, attempts, next_attempt_at)
       select id, revision, ${at}, 0, ${at} from w
       on conflict (user_id) do update
         set revision = greatest(contact_search_pending.revision, excluded.revision),
             enqueued_at = excluded.enqueued_at, attempts = 0, next_attempt_at = excluded.next_attempt_at
     ),
     superseded as (
       update messenger.user_phone_conflicts
          set status = 'Resolved', resolution = 'Superseded', resolved_at = ${at}
        where status = 'Open' and user_id in (select id from upd)
     )
     select (select count(*) from w)::int as written,
            case when ${firstInTransaction(tx)}::boolean then pg_notify('${sql.raw(CONTACT_SEARCH_WAKE_CHANNEL)}', '') end`,
    { name: 'messenger_user_batch_write' },
  );
  return r!.written;
}
