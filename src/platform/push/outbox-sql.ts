import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import { currentTraceparent } from '../observability/tracing.ts';
import { newId } from '../time.ts';

/**
 * push.realtime_outbox statements of the kernel's push part (seed 000's realtime outbox, in the
 * part's own schema and drizzle part: push-schema.ts): the owners' writes in
 * their own transactions, the state the gauges read, and retention. One small function each over the
 * `Db` the caller passes. The dispatcher's claim and outcome are in claim-sql.ts.
 */

/** NOTIFY channel that wakes the RealtimeDispatchJob; delivered when the owner's transaction commits. */
export const REALTIME_OUTBOX_CHANNEL = 'realtime_outbox';

/** A push intent as its owner writes it: a kind it registered and typed references (the owner narrows the types). */
export interface NewPushRow {
  kind: string;
  /** ChatGroup (chat:{ChatId}) or User (user:{TargetUserId}). */
  targetKind: 'ChatGroup' | 'User';
  chatId?: string | null;
  targetUserId?: string | null;
  messageId?: string | null;
  refId?: string | null;
  sessionKind?: string | null;
  seq?: number | null;
}

/**
 * Push intents drawn from the owner's own statement: one per row of `from` (e.g. `from msg m`, the
 * messages that statement just inserted), each reference an SQL expression over it (left out: null).
 * For an owner that writes its change and the rows announcing it in one statement (a message send,
 * whose Seq the statement itself hands out). `traceparent` defaults to the writer's own.
 */
export interface PushRowsFrom {
  kind: string;
  from: SQL;
  id: SQL;
  targetKind: SQL;
  chatId?: SQL;
  targetUserId?: SQL;
  messageId?: SQL;
  refId?: SQL;
  sessionKind?: SQL;
  seq?: SQL;
  traceparent?: SQL;
}

/** What the writer takes: rows whose values the owner holds, or rows drawn from its statement. */
export type PushRows = readonly NewPushRow[] | PushRowsFrom;

export const kindsOf = (rows: PushRows): readonly string[] => ('from' in rows ? [rows.kind] : rows.map((r) => r.kind));

const INSERT_INTO = sql.raw(`insert into push.realtime_outbox
        (id, kind, target_kind, chat_id, target_user_id, message_id, ref_id, session_kind, seq, next_attempt_at, created_at, updated_at, traceparent)`);

/**
 * The INSERT of push intents as a statement fragment, for the port's one writer (Push.insert, which
 * checks the kinds first): run on its own (Push.enqueue) or inside the owner's statement (one round
 * trip). Either form keeps its text the same whatever the rows (lists travel as one parameter each),
 * as a named statement needs. The rows keep the writer's traceparent (null while tracing is off), so
 * the ops console links a row that ends up Quarantined to its trace.
 */
export function realtimeInsert(rows: PushRows, now: Date): SQL {
  const at = sql`${now.toISOString()}::timestamptz`;
  if ('from' in rows) {
    const or = (e: SQL | undefined) => e ?? sql`null`;
    return sql`${INSERT_INTO}
      select ${rows.id}, ${rows.kind}::varchar, ${rows.targetKind}, ${or(rows.chatId)}, ${or(rows.targetUserId)}, ${or(rows.messageId)},
             ${or(rows.refId)}, ${or(rows.sessionKind)}, ${or(rows.seq)}, ${at}, ${at}, ${at}, ${rows.traceparent ?? sql`${currentTraceparent()}::varchar`}
      ${rows.from}`;
  }
  const col = <T>(f: (r: NewPushRow) => T | null | undefined) => sql.param(rows.map((r) => f(r) ?? null));
  return sql`${INSERT_INTO}
      select v.*, ${at}, ${at}, ${at}, ${currentTraceparent()}::varchar
        from unnest(${sql.param(rows.map(() => newId()))}::uuid[], ${col((r) => r.kind)}::varchar[], ${col((r) => r.targetKind)}::varchar[],
                    ${col((r) => r.chatId)}::uuid[], ${col((r) => r.targetUserId)}::uuid[], ${col((r) => r.messageId)}::uuid[],
                    ${col((r) => r.refId)}::uuid[], ${col((r) => r.sessionKind)}::varchar[], ${col((r) => r.seq)}::bigint[]) v`;
}

/** Runs the insert in the owner's transaction and wakes the dispatcher, in one statement (NOTIFY is delivered at commit). */
export async function runInsert(tx: Db, insert: SQL): Promise<void> {
  await query(tx, sql`with inserted as (${insert}) select pg_notify(${REALTIME_OUTBOX_CHANNEL}, '')`);
}

/** A carried frame for one user: its row holds the payload, no references. */
export interface NewCarriedRow {
  kind: string;
  targetUserId: string;
  payload: Record<string, unknown>;
}

/**
 * The carried frames' own write (Push.userFrames), which fill only their kind, user and payload: one named
 * statement (planned once per connection; the owners write these with every status change) whose
 * payloads travel as one JSON array, parsed once, instead of an array of JSON texts PostgreSQL
 * parses one by one after pg escaped each; the columns they leave null are not sent at all. The
 * writer's traceparent is one value for all rows, as in realtimeInsert.
 */
export async function enqueueCarried(tx: Db, rows: readonly NewCarriedRow[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  const at = now.toISOString();
  await query(
    tx,
    sql`with inserted as (
          insert into push.realtime_outbox (id, kind, target_kind, target_user_id, payload, next_attempt_at, created_at, updated_at, traceparent)
          select v.id, v.kind, 'User', v.user_id, v.payload, ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz, ${currentTraceparent()}::varchar
            from rows from (unnest(${sql.param(rows.map(() => newId()))}::uuid[]), unnest(${sql.param(rows.map((r) => r.kind))}::varchar[]),
                            unnest(${sql.param(rows.map((r) => r.targetUserId))}::uuid[]),
                            jsonb_array_elements(${JSON.stringify(rows.map((r) => r.payload))}::jsonb)) as v(id, kind, user_id, payload))
        select pg_notify(${REALTIME_OUTBOX_CHANNEL}, '')`,
    { name: 'messenger_realtime_carried' },
  );
}

/** For messenger_realtime_pending. */
export async function countPending(db: Db): Promise<number> {
  const { rows } = await query<{ n: number }>(db, sql`select count(*)::int as n from push.realtime_outbox where status = 'Pending'`);
  return rows[0]?.n ?? 0;
}

/**
 * RetentionDone: deletes up to `limit` Done rows older than `cutoff`; returns their ids. A Done row's NextAttemptAt is its last claim time
 * plus that claim's backoff, so `next_attempt_at < cutoff` finds old rows through ix_rto_due.
 */
export async function deleteDoneBefore(db: Db, cutoff: Date, limit: number): Promise<string[]> {
  const { rows } = await query<{ id: string }>(
    db,
    sql`delete from push.realtime_outbox where id in (
       select id from push.realtime_outbox where status = 'Done' and next_attempt_at < ${cutoff} limit ${limit})
     returning id`,
  );
  return rows.map((r) => r.id);
}

export interface RealtimeOutboxState {
  quarantined: number;
  /** now − CreatedAt of the oldest Pending row, in seconds (0 when none is Pending). */
  oldestPendingAgeSeconds: number;
}

/**
 * What the on-call gauges read at scrape time: Quarantined rows (they stay after a restart, unlike
 * the counter) and the oldest Pending row's age. Both go through ix_rto_due's status prefix, so the
 * cost follows the Quarantined and Pending rows, not the Done history.
 */
export async function realtimeOutboxState(db: Db, now: Date): Promise<RealtimeOutboxState> {
  const { rows } = await query<RealtimeOutboxState>(
    db,
    sql`select (select count(*) from push.realtime_outbox where status = 'Quarantined')::int as quarantined,
               coalesce(extract(epoch from ${now.toISOString()}::timestamptz - (
                 select min(created_at) from push.realtime_outbox where status = 'Pending')), 0)::float8 as "oldestPendingAgeSeconds"`,
  );
  return { quarantined: rows[0]?.quarantined ?? 0, oldestPendingAgeSeconds: Math.max(0, rows[0]?.oldestPendingAgeSeconds ?? 0) };
}
