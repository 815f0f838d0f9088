import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { MessengerContactSearchDocument } from './port.ts';

/** SQL of the contact search indexer and rebuild job: the pending queue and replica scans. */

const DOCUMENT = sql.raw(`u.id as "userId", u.first_name as "firstName", u.middle_name as "middleName", u.last_name as "lastName",
  u.phone_number as "phoneNumber", u.is_active as "isActive", u.revision`);

type DocRow = Omit<MessengerContactSearchDocument, 'revision'> & { revision: string };
const toDocument = (r: DocRow): MessengerContactSearchDocument => ({ ...r, revision: Number(r.revision) });

export interface PendingDocument {
  doc: MessengerContactSearchDocument;
  attempts: number;
}

/**
 * Up to `limit` queued documents due at `now`, oldest first, read with the replica row as it is
 * now. No lock is held: the indexer runs single-runner, and a change committed meanwhile raises
 * the queued revision, so `deleteIndexed` leaves that row for the next round.
 */
export async function selectDuePending(db: Db, now: Date, limit: number, exclude: readonly string[] = []): Promise<PendingDocument[]> {
  const { rows } = await query<DocRow & { attempts: number }>(
    db,
    // The queue's first `limit` due rows by the due index, then their replica rows by primary key
    // (the = ANY: a join lets the planner hash a scan of the whole replica). Joined before the
    // limit, it hashed the replica and sorted every due row per claim: 36 ms per 500 at a
    // 19,000-row backlog over 37,000 users. Every queued row has its replica row (the consumer
    // queues it with the row's write; replica rows are never deleted).
    sql`with p as materialized (
       select q.user_id, q.attempts, q.next_attempt_at from messenger.contact_search_pending q
        where q.next_attempt_at <= ${now} and not (q.user_id = any(${sql.param(exclude)}::uuid[]))
        order by q.next_attempt_at
        limit ${limit}
     )
     select ${DOCUMENT}, p.attempts
       from p join messenger.users u on u.id = p.user_id
      where u.id = any(array(select user_id from p))
      order by p.next_attempt_at`,
  );
  return rows.map(({ attempts, ...r }) => ({ doc: toDocument(r), attempts }));
}

/**
 * Removes queue rows whose revision is now indexed (a newer queued revision stays). Rows locked by
 * a consumer transaction are skipped, never waited for: that transaction is raising their revision
 * anyway, and waiting could deadlock against its other rows.
 */
export async function deleteIndexed(db: Db, docs: readonly MessengerContactSearchDocument[]): Promise<number> {
  if (docs.length === 0) return 0;
  const ids = sql`${sql.param(docs.map((d) => d.userId))}::uuid[]`;
  const { rowCount } = await query(
    db,
    sql`delete from messenger.contact_search_pending p
      where p.user_id in (
        select q.user_id from messenger.contact_search_pending q
          join unnest(${ids}, ${sql.param(docs.map((d) => d.revision))}::bigint[]) as d(user_id, revision) on q.user_id = d.user_id and q.revision <= d.revision
         -- Drives the read through the primary key: without it the planner hashes the whole
         -- queue, which costs most when the queue is longest (a backlog).
         where q.user_id = any(${ids})
         for update of q skip locked)`,
  );
  return rowCount;
}

/** Puts failed documents back with their next attempt time (the caller's backoff per attempt). */
export async function rescheduleFailed(db: Db, failed: readonly { userId: string; nextAttemptAt: Date }[]): Promise<void> {
  if (failed.length === 0) return;
  // Locked rows are skipped: a consumer transaction is resetting them for an immediate attempt.
  const ids = sql`${sql.param(failed.map((f) => f.userId))}::uuid[]`;
  await query(
    db,
    sql`update messenger.contact_search_pending p
        set attempts = p.attempts + 1, next_attempt_at = d.next_attempt_at
       from unnest(${ids}, ${sql.param(failed.map((f) => f.nextAttemptAt))}::timestamptz[]) as d(user_id, next_attempt_at)
      where p.user_id = d.user_id
        and p.user_id in (select q.user_id from messenger.contact_search_pending q
                           where q.user_id = any(${ids}) for update of q skip locked)`,
  );
}

/** Queues documents for the indexer (the rebuild job hands it what the index refused). */
export async function enqueuePending(db: Db, docs: readonly MessengerContactSearchDocument[], now: Date): Promise<void> {
  if (docs.length === 0) return;
  await query(
    db,
    sql`insert into messenger.contact_search_pending (user_id, revision, enqueued_at, attempts, next_attempt_at)
     select user_id, revision, ${now}::timestamptz, 0, ${now}::timestamptz
       from unnest(${sql.param(docs.map((d) => d.userId))}::uuid[], ${sql.param(docs.map((d) => d.revision))}::bigint[]) as d(user_id, revision)
     on conflict (user_id) do update set revision = greatest(contact_search_pending.revision, excluded.revision)`,
  );
}

export async function countPending(db: Db): Promise<number> {
  const { rows } = await query<{ n: string }>(db, sql`select count(*) as n from messenger.contact_search_pending`);
  return Number(rows[0]!.n);
}

/** Replica rows after `after` in id order (keyset pagination for the rebuild job). */
export async function selectReplicaPage(db: Db, after: string | null, limit: number): Promise<MessengerContactSearchDocument[]> {
  const { rows } = await query<DocRow>(
    db,
    sql`select ${DOCUMENT} from messenger.users u
      where ${after}::uuid is null or u.id > ${after}::uuid
      order by u.id limit ${limit}`,
  );
  return rows.map(toDocument);
}

/** Which of these ids have a replica row. */
export async function existingReplicaIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await query<{ id: string }>(db, sql`select id from messenger.users where id = any(${sql.param(ids)}::uuid[])`);
  return new Set(rows.map((r) => r.id));
}

export async function countReplica(db: Db): Promise<number> {
  const { rows } = await query<{ n: string }>(db, sql`select count(*) as n from messenger.users`);
  return Number(rows[0]!.n);
}
