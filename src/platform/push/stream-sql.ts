import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import { spansOf } from './spans-sql.ts';
import type { PushRow } from './types.ts';

/**
 * Reads and retention of the per-user event stream (push.realtime_events). Positions are handed
 * out by the dispatcher's claim (claim-sql.ts), in push order, right before the push: a row reaches
 * the stream only once it is committed and claimed, so a position is never handed out ahead of an
 * earlier commit — the order outbox ids cannot give (an id is drawn before its transaction commits).
 */

/** Positions below it were trimmed by retention (a cursor before it answers 410). */
export const streamHorizon = (): SQL => sql`coalesce((select trimmed_below from push.realtime_event_horizon where id = 1), 0)::float8`;

/**
 * The reader's head: the newest committed position among the events this reader can read (addressed
 * to user:{UserId}, or a chat's within one of their membership spans), never below the horizon —
 * where a new client of theirs starts. Not the stream's global head: that moves with every event
 * pushed to anyone, so watching it would show others' activity, down to a read of a message request
 * that the consent rules keep on the reader's own devices (docs/security.md, "Consent").
 */
export const streamHeadOf = (userId: string): SQL =>
  sql`greatest(coalesce(greatest(
        (select max(e.position) from push.realtime_events e where e.target_kind = 'User' and e.target_user_id = ${userId}),
        (select max(last.position) from (${spansOf(userId)}) s
           cross join lateral (
             select e.position from push.realtime_events e
              where e.target_kind = 'ChatGroup' and e.chat_id = s.chat_id
                and e.membership_version >= s.from_version and (s.to_version is null or e.membership_version < s.to_version)
              order by e.position desc limit 1) last)), 0)::float8, ${streamHorizon()} - 1)`;

/** The reader's head on its own: where a new client (or a fresh chat-list token) of theirs starts. */
export async function readStreamHead(db: Db, userId: string): Promise<number> {
  const { rows } = await query<{ head: number }>(db, sql`select ${streamHeadOf(userId)} as head`);
  return rows[0]!.head;
}

/** A stored event: the row's references as pushed (typed by the kinds' owner, `R`), and its position. */
export type StreamEventRow<R extends PushRow = PushRow> = R & {
  position: number;
  createdAt: Date;
};

export interface StreamPage<R extends PushRow = PushRow> {
  /** The caller's events after the cursor, in position order (at most `limit`). */
  rows: StreamEventRow<R>[];
  /** The reader's head (streamHeadOf), read in the same snapshot. */
  head: number;
  /** Positions below it were trimmed by retention. */
  trimmedBelow: number;
}

/**
 * The user's events after `after`: those addressed to user:{UserId}, and the chat events of every
 * span of group membership they had (push.chat_membership_spans, which the group's owner writes
 * through spans-sql.ts), each read by index from the cursor on (one scan per span), in
 * one snapshot with the stream's head and horizon.
 */
export async function readStream<R extends PushRow = PushRow>(db: Db, userId: string, after: number, limit: number): Promise<StreamPage<R>> {
  const { rows } = await query<{ page: StreamEventRow<R>[] | null; head: number; trimmedBelow: number }>(
    db,
    sql`with mine as (
          (select e.* from push.realtime_events e
            where e.target_kind = 'User' and e.target_user_id = ${userId} and e.position > ${after}
            order by e.position limit ${limit})
          union all
          (select e.* from (${spansOf(userId)}) s
             cross join lateral (
               select e.* from push.realtime_events e
                where e.target_kind = 'ChatGroup' and e.chat_id = s.chat_id and e.position > ${after}
                  and e.membership_version >= s.from_version and (s.to_version is null or e.membership_version < s.to_version)
                order by e.position limit ${limit}) e)),
        page as (select * from mine order by position limit ${limit})
        select (select json_agg(json_build_object(
                  'position', p.position, 'id', p.outbox_id, 'kind', p.kind, 'targetKind', p.target_kind, 'chatId', p.chat_id,
                  'targetUserId', p.target_user_id, 'messageId', p.message_id, 'refId', p.ref_id, 'sessionKind', p.session_kind,
                  'seq', p.seq, 'payload', p.payload, 'createdAt', p.created_at) order by p.position) from page p) as page,
               ${streamHeadOf(userId)} as head, ${streamHorizon()} as "trimmedBelow"`,
  );
  const r = rows[0]!;
  const page = (r.page ?? []).map((e) => ({ ...e, createdAt: new Date(e.createdAt as unknown as string) }));
  return { rows: page, head: r.head, trimmedBelow: r.trimmedBelow };
}

export interface ChangedGroups {
  /** Each group (ChatId) with an event for the reader after the cursor, at its latest such position, oldest change first. */
  groups: { chatId: string; position: number }[];
  head: number;
  trimmedBelow: number;
}

/**
 * The groups whose events reached the reader after `after`, each once at its latest event, oldest
 * change first (at most `limit`): the group events of every membership span (as for
 * readStream), and the group-bearing events addressed to the reader alone (a removal notice among
 * them); read with the reader's head and the horizon in one snapshot. What a chat list's sync asks.
 */
export async function changedGroups(db: Db, userId: string, after: number, limit: number): Promise<ChangedGroups> {
  const { rows } = await query<{ groups: { chatId: string; position: number }[] | null; head: number; trimmedBelow: number }>(
    db,
    sql`with changed as (
          select e.chat_id, max(e.position) as position from push.realtime_events e
           where e.target_kind = 'User' and e.target_user_id = ${userId} and e.chat_id is not null and e.position > ${after}
           group by e.chat_id
          union all
          select s.chat_id, (select max(e.position) from push.realtime_events e
                              where e.target_kind = 'ChatGroup' and e.chat_id = s.chat_id and e.position > ${after}
                                and e.membership_version >= s.from_version and (s.to_version is null or e.membership_version < s.to_version))
            from (${spansOf(userId)}) s),
        page as (
          select chat_id, max(position) as position from changed where position is not null
           group by chat_id order by max(position) limit ${limit})
        select (select json_agg(json_build_object('chatId', chat_id, 'position', position) order by position) from page) as groups,
               ${streamHeadOf(userId)} as head, ${streamHorizon()} as "trimmedBelow"`,
  );
  const r = rows[0]!;
  return { groups: r.groups ?? [], head: r.head, trimmedBelow: r.trimmedBelow };
}

/**
 * Retention: deletes up to `limit` events recorded before `cutoff`, oldest first, and moves the
 * horizon past them (a cursor before it then answers 410), in one statement. Returns their positions.
 *
 * recorded_at has no index (the stream would pay an entry per pushed frame for an hourly job): the
 * `limit` oldest positions are read through the primary key and those before the first one recorded
 * at or after `cutoff` go. Positions are taken in recording order, so that is every old one among
 * them; one out of order (two runners in a failover) waits until the younger row before it is old too.
 */
export async function trimStream(db: Db, cutoff: Date, limit: number): Promise<number[]> {
  const { rows } = await query<{ position: number }>(
    db,
    sql`with head as (
          select position, recorded_at from push.realtime_events order by position limit ${limit}),
        gone as (
          delete from push.realtime_events where position in (
            select position from head
             where position < coalesce((select min(position) from head where recorded_at >= ${cutoff}), (select max(position) + 1 from head)))
          returning position),
        moved as (
          update push.realtime_event_horizon set trimmed_below = greatest(trimmed_below, (select max(position) + 1 from gone))
           where id = 1 and exists (select 1 from gone))
        select position::float8 as position from gone`,
  );
  return rows.map((r) => r.position);
}
