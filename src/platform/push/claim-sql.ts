import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import { claimReadsSql, type ClaimReadsSql } from './claim-reads.ts';
import { ATTEMPTS_EXHAUSTED } from './rules.ts';
import type { PushRow } from './types.ts';

/**
 * The dispatcher's statements over push.realtime_outbox: the claim (SKIP LOCKED; Attempts,
 * NextAttemptAt and RowVersion bumped in its own short transaction; stream positions handed out)
 * and the outcomes, which land only on the RowVersion they claimed. What the claim reads beside
 * its rows for their owners (a message row's message, a chat row's membership version) each owner
 * declares as data in its registration (claim-reads.ts); push writes that SQL itself.
 */

export interface ClaimedRow extends PushRow {
  attempts: number;
  rowVersion: number;
  createdAt: Date;
  /**
   * For a row addressed to chat:{ChatId}: the chat's membership version as the claim read it (at
   * least the one the row was committed at). Its sends carry it, so every replica delivers only to
   * members as of that version, whatever join or leave messages it missed.
   */
  membershipVersion?: number | null;
  /** Its event-stream position, in push order (null for a row the claim quarantined). */
  position?: number | null;
}

/** No owner reads anything beside the rows: no columns, no version, no Seq order. */
export const NO_CLAIM_READS: ClaimReadsSql = claimReadsSql([]);

const CLAIMED = sql.raw(`o.id, o.kind, o.target_kind as "targetKind", o.chat_id as "chatId", o.target_user_id as "targetUserId",
  o.message_id as "messageId", o.ref_id as "refId", o.session_kind as "sessionKind", o.seq::float8 as seq, o.payload, o.attempts,
  o.row_version as "rowVersion", o.created_at as "createdAt"`);

/**
 * Makes the statement's own transaction commit without waiting for the WAL flush (is_local: the
 * pooled connection keeps its setting). For the dispatcher's claims and outcomes only, never for
 * an owner's write: losing the last of them in a PostgreSQL crash means a row is pushed again (the
 * claim lost: same attempt again; the outcome lost: Pending, retried after its backoff), which
 * at-least-once delivery allows (seed 000: "Потеря push … безопасна"). A crash of this process
 * loses nothing: PostgreSQL flushes on its own within wal_writer_delay. The claim is on the
 * persist → push path, and a flush per claim costs more than the claim.
 */
const ASYNC_COMMIT = sql.raw(`select set_config('synchronous_commit', 'off', true)`);

export interface ClaimParams {
  now: Date;
  limit: number;
  maxAttempts: number;
  /** Delay before attempt k + 1 after the claim of attempt k, at index k − 1 (the kernel's backoffScheduleMs). */
  delaysMs: number[];
  /** Random extra share of each delay (0.2 → up to +20%). */
  jitter: number;
  /** Rows not to claim: the batch whose outcomes are still being recorded. */
  exclude?: readonly string[];
}

/**
 * The claim, one statement (its own short transaction): due Pending rows by NextAttemptAt, then id
 * (a new row's NextAttemptAt is its owner's write time and its id is drawn with it, so this is
 * insertion order), through ix_rto_due: a claim reads about `limit` index entries however many rows
 * are Pending and however many Done rows retention still keeps. Ordered by id alone, the planner
 * walks the primary key past every Done row once the Pending rows look plentiful (a backlog after
 * an outage: 590 ms a claim with 100,000 Pending behind 500,000 Done, 0.2 ms this way), or sorts
 * every due row. Locked with SKIP LOCKED (a parallel runner's rows are skipped, not waited for); Attempts + 1 and
 * NextAttemptAt = now + backoff (pre-increment: a crash before the outcome retries after the
 * backoff); RowVersion + 1. A row that already used MaxAttempts is quarantined instead
 * (`exhausted`). Each message row comes with its message as the statement read it (one round trip
 * less before the push; the payload is still built outside any transaction).
 *
 * The same statement gives every row to push its event-stream position (push.realtime_events),
 * in push order: id (commit) order, except that each chat's MessageReceived rows take their slots in
 * Seq order — a send's row id is drawn before its statement waits for the chat lock, so two
 * concurrent sends can get ids in the opposite order of their Seqs, and pushing them by Seq spares
 * the client a gap refill. A row pushed before (a retry) moves to a new position. The rows come back
 * in that order: quarantined ones first, then by position.
 */
export async function claimDue(db: Db, p: ClaimParams, reads: ClaimReadsSql = NO_CLAIM_READS): Promise<(ClaimedRow & { exhausted: boolean })[]> {
  const now = sql`${p.now}::timestamptz`;
  const spent = sql`o.attempts >= ${p.maxAttempts}`;
  const { rows } = await query<ClaimedRow & { exhausted: boolean }>(
    db,
    sql`with due as (
       select id from push.realtime_outbox
        where status = 'Pending' and next_attempt_at <= ${now} and not (id = any(${sql.param(p.exclude ?? [])}::uuid[]))
        order by next_attempt_at, id limit ${p.limit}
        for update skip locked),
     claimed as (
       update push.realtime_outbox o
          set attempts = case when ${spent} then o.attempts else o.attempts + 1 end,
              status = case when ${spent} then 'Quarantined' else 'Pending' end,
              last_error = case when ${spent} then ${ATTEMPTS_EXHAUSTED} else o.last_error end,
              next_attempt_at = case when ${spent} then ${now}
                else ${now} + make_interval(secs => round((${sql.param(p.delaysMs)}::float8[])[o.attempts + 1] * (1 + ${p.jitter} * random())) / 1000.0) end,
              row_version = o.row_version + 1, updated_at = ${now}
         from due where o.id = due.id
       returning ${CLAIMED}, o.status = 'Quarantined' as exhausted),
     live as (
       select c.*, ${reads.groupVersion} as membership_version, row_number() over (order by c.id) as slot,
              ${reads.bySeq} as by_seq
         from claimed c ${reads.groupJoins}
        where not c.exhausted),
     slotted as (
       -- A chat's new messages: the k-th by Seq takes the slot of the k-th by id.
       select l.*, case when l.by_seq
                        then (array_agg(l.slot) over (partition by l."chatId", l.by_seq order by l.id
                                                      rows between unbounded preceding and unbounded following))
                             [row_number() over (partition by l."chatId", l.by_seq order by l.seq)]
                        else l.slot end as push_slot
         from live l),
     streamed as (
       insert into push.realtime_events as e
         (position, outbox_id, kind, target_kind, chat_id, target_user_id, message_id, ref_id, session_kind, seq, payload, membership_version, created_at, recorded_at)
       select nextval('push.realtime_event_position'), s.id, s.kind, s."targetKind", s."chatId", s."targetUserId", s."messageId", s."refId",
              s."sessionKind", s.seq, s.payload, s.membership_version, s."createdAt", ${now}
         from (select * from slotted order by push_slot) s
       on conflict (outbox_id) do update
         set position = excluded.position, membership_version = excluded.membership_version, recorded_at = excluded.recorded_at
       returning e.outbox_id, e.position)
     select c.*${reads.columns}, ${reads.groupVersion} as "membershipVersion", s.position::float8 as position
       from claimed c cross join (${ASYNC_COMMIT}) a ${reads.joins}
       ${reads.groupJoins}
       left join streamed s on s.outbox_id = c.id`,
    // Named: each connection plans it once (the dispatcher runs it many times a second under load).
    { name: 'messenger_realtime_claim' },
  );
  const byId = (a: ClaimedRow, b: ClaimedRow) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return rows.map((r) => reads.take(r)).sort((a, b) => (a.position ?? -1) - (b.position ?? -1) || byId(a, b));
}

export interface OutcomeUpdate {
  id: string;
  /** The RowVersion the claim left; anything else means a requeue or another runner came in between. */
  rowVersion: number;
  status: 'Pending' | 'Done' | 'Quarantined';
  lastError: string | null;
  /** −1 gives back an attempt that was claimed but never made (graceful stop). */
  attemptsDelta: number;
  /** Set to make the row claimable at once (released rows); null keeps the claim's NextAttemptAt. */
  nextAttemptAt: Date | null;
}

/**
 * Records outcomes set-based, each only on the RowVersion its claim left (every change of a row's
 * status — claim, outcome, requeue — bumps it, so an unchanged RowVersion is a row still Pending as
 * claimed). Returns the ids that landed. Through the function `push.realtime_record_outcomes`
 * (drizzle/push/0000), which finds the rows by id through the primary key whatever
 * the planner believes: as a statement, a plan made while nothing was Pending read every Pending
 * row through ix_rto_due for each outcome (200 ms a batch behind a backlog of 70,000 rows), and a
 * named statement's generic plan, settled while the table was small, scanned the whole table once
 * it had grown (90 ms a batch at 18,000 rows) — the dispatcher falling further behind the longer
 * the backlog. Its own transaction commits without waiting for the WAL flush, as the claim's does.
 */
export async function recordOutcomes(db: Db, updates: readonly OutcomeUpdate[], now: Date): Promise<Set<string>> {
  if (updates.length === 0) return new Set();
  const col = <T>(f: (u: OutcomeUpdate) => T) => sql.param(updates.map(f));
  const { rows } = await query<{ id: string }>(
    db,
    sql`select id from push.realtime_record_outcomes(${col((u) => u.id)}::uuid[], ${col((u) => u.rowVersion)}::int[],
          ${col((u) => u.status)}::varchar[], ${col((u) => u.lastError)}::varchar[], ${col((u) => u.attemptsDelta)}::int[],
          ${col((u) => u.nextAttemptAt)}::timestamptz[], ${now}::timestamptz) as id`,
    { name: 'messenger_realtime_outcomes' },
  );
  return new Set(rows.map((r) => r.id));
}

