import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { isPgError } from '../../../platform/errors/index.ts';
import { newId } from '../../../platform/time.ts';
import type { PhoneHolders, ReplicaState, UserSnapshot } from './rules.ts';

/**
 * SQL of the user replica, each operation one statement over the transaction the caller passes
 * (the consumer's, which also holds the inbox row); the hot ones named, so each connection parses
 * and plans them once. The statements also keep the two side tables in step:
 * `contact_search_pending` (what the indexer must write after commit) and `user_phone_conflicts`
 * (support reviews snapshots whose phone another live row holds, INV-MU-2).
 */

export const LIVE_PHONE_INDEX = 'ux_messenger_users_live_phone';
/** NOTIFY channel waking the contact search indexer; sent with each write, delivered on commit. */
export const CONTACT_SEARCH_WAKE_CHANNEL = 'messenger_contact_search';

/** Queues the written row (CTE `w(id, revision)`) for the indexer. */
const queueForIndex = (now: SQL) => sql`
    pending as (
      insert into messenger.contact_search_pending (user_id, revision, enqueued_at, attempts, next_attempt_at)
      select id, revision, ${now}, 0, ${now} from w
      on conflict (user_id) do update
        set revision = greatest(contact_search_pending.revision, excluded.revision),
            enqueued_at = excluded.enqueued_at, attempts = 0, next_attempt_at = excluded.next_attempt_at
    )`;

/**
 * The version guard (INV-MU-1): only a newer snapshot is written. `force` (the runbook resync,
 * which re-applies the topic's newest record) writes over any version, a damaged one included.
 */
const newerOrForced = (force: boolean, version: SQL) => sql`(identity_user_version < ${version} or ${force}::boolean)`;

/** A snapshot's values as typed statement parameters. */
const valuesOf = (s: UserSnapshot, phoneNumber: string | null, now: Date) => ({
  id: sql`${s.userId}::uuid`,
  firstName: sql`${s.firstName}::varchar`,
  middleName: sql`${s.middleName}::varchar`,
  lastName: sql`${s.lastName}::varchar`,
  phone: sql`${phoneNumber}::varchar`,
  isActive: sql`${s.isActive}::boolean`,
  version: sql`${s.version}::bigint`,
  now: sql`${now}::timestamptz`,
});

/** Transactions (the consumer's, one per group of messages) that already carry the indexer's wake-up. */
const notified = new WeakSet<Db>();
export const firstInTransaction = (tx: Db): boolean => {
  if (notified.has(tx)) return false;
  notified.add(tx);
  return true;
};

type StateRow = { found: boolean; phone_number: string | null; is_active: boolean | null; identity_user_version: string | null };
const stateOf = (r: StateRow): ReplicaState | null =>
  r.found ? { phoneNumber: r.phone_number, isActive: r.is_active === true, version: Number(r.identity_user_version) } : null;

export interface SafeApplyResult {
  /** What was written; null when the fast path could not decide (stale, taken phone, or a live phone change). */
  operation: 'created' | 'updated' | null;
  /** The replica row before this event (null: first appearance). */
  existing: ReplicaState | null;
}

/**
 * The fast path, one statement: applies the snapshot when the write cannot meet the live-phone
 * index — a first appearance whose phone no live row holds (ON CONFLICT DO NOTHING otherwise,
 * which also waits out a concurrent writer instead of failing), or a newer Version that keeps
 * the row's live phone or leaves the row not live. Also queues the search document, closes the
 * user's older open conflicts (the phone is applied) and wakes the indexer on commit. Anything
 * else writes nothing and returns the row as it was, for the stale check and the slow path.
 */
export async function applyIfCannotCollide(tx: Db, s: UserSnapshot, now: Date, force = false): Promise<SafeApplyResult> {
  const v = valuesOf(s, s.phoneNumber, now);
  const { rows } = await query<StateRow & { created: number; updated: number }>(
    tx,
    sql`with cur as (
      select phone_number, is_active, identity_user_version from messenger.users where id = ${v.id}
    ),
    ins as (
      insert into messenger.users
        (id, first_name, middle_name, last_name, phone_number, is_active, identity_user_version, created_at, updated_at)
      select ${v.id}, ${v.firstName}, ${v.middleName}, ${v.lastName}, ${v.phone}, ${v.isActive}, ${v.version}, ${v.now}, ${v.now}
       where not exists (select 1 from cur)
      on conflict do nothing
      returning id, revision
    ),
    upd as (
      update messenger.users u
         set first_name = ${v.firstName}, middle_name = ${v.middleName}, last_name = ${v.lastName}, phone_number = ${v.phone}, is_active = ${v.isActive},
             identity_user_version = ${v.version}, revision = u.revision + 1, updated_at = ${v.now}
       where u.id = ${v.id} and ${newerOrForced(force, v.version)} and (not ${v.isActive} or (u.is_active and u.phone_number = ${v.phone}))
      returning u.id, u.revision
    ),
    w as (select id, revision from ins union all select id, revision from upd),
    ${queueForIndex(v.now)},
    -- A first appearance has no conflicts yet; only an update can supersede one.
    superseded as (
      update messenger.user_phone_conflicts
         set status = 'Resolved', resolution = 'Superseded', resolved_at = ${v.now}
       where user_id = ${v.id} and status = 'Open' and exists (select 1 from upd)
    )
    select (select count(*) from ins)::int as created, (select count(*) from upd)::int as updated,
           exists (select 1 from cur) as found, (select phone_number from cur), (select is_active from cur),
           (select identity_user_version from cur),
           -- PostgreSQL delivers one notification per transaction anyway: sent by its first event only.
           case when ${firstInTransaction(tx)}::boolean then pg_notify('${sql.raw(CONTACT_SEARCH_WAKE_CHANNEL)}', '') end`,
    { name: 'messenger_user_apply_safe' },
  );
  const r = rows[0]!;
  return { operation: r.created > 0 ? 'created' : r.updated > 0 ? 'updated' : null, existing: stateOf(r) };
}

/** The replica row of a user (null: first appearance) and the live rows holding the phones in play. */
export async function readReplicaState(
  tx: Db,
  userId: string,
  phoneNumber: string,
): Promise<{ existing: ReplicaState | null; holders: PhoneHolders }> {
  const id = sql`${userId}::uuid`;
  const { rows } = await query<StateRow & { holder_of_incoming: string | null; holder_of_current: string | null }>(
    tx,
    sql`select u.id is not null as found, u.phone_number, u.is_active, u.identity_user_version,
            (select h.id from messenger.users h
              where h.phone_number = ${phoneNumber}::varchar and h.is_active and h.id <> ${id}) as holder_of_incoming,
            (select h.id from messenger.users h
              where h.phone_number = u.phone_number and h.is_active and h.id <> ${id}) as holder_of_current
       from (select 1) k left join messenger.users u on u.id = ${id}`,
    { name: 'messenger_user_read_state' },
  );
  const r = rows[0];
  return { existing: stateOf(r!), holders: { ofIncoming: r!.holder_of_incoming, ofCurrent: r!.holder_of_current } };
}

export interface ReplicaWrite {
  snapshot: UserSnapshot;
  phoneNumber: string | null;
  conflict: { phoneNumber: string; holderUserId: string | null } | null;
  messageId: string;
  now: Date;
  /** Written over any version (the runbook resync); otherwise only over an older one. */
  force?: boolean;
}

const upsert = (mode: 'insert' | 'update', v: ReturnType<typeof valuesOf>, force: boolean): SQL =>
  mode === 'insert'
    ? sql`insert into messenger.users
             (id, first_name, middle_name, last_name, phone_number, is_active, identity_user_version, created_at, updated_at)
           values (${v.id}, ${v.firstName}, ${v.middleName}, ${v.lastName}, ${v.phone}, ${v.isActive}, ${v.version}, ${v.now}, ${v.now})
           on conflict do nothing
           returning id, revision`
    : sql`update messenger.users
              set first_name = ${v.firstName}, middle_name = ${v.middleName}, last_name = ${v.lastName}, phone_number = ${v.phone},
                  is_active = ${v.isActive}, identity_user_version = ${v.version}, revision = revision + 1, updated_at = ${v.now}
            where id = ${v.id} and ${newerOrForced(force, v.version)}
            returning id, revision`;

/**
 * The slow path's write, after the phone decision: creates (`insert`) or updates (`update`,
 * version-guarded) the row, queues its search document, supersedes the user's other open
 * conflicts and records the new one if any — one statement. Returns false when nothing was
 * written: the insert met a unique index (a concurrent writer took the phone: ON CONFLICT DO
 * NOTHING waits for it and skips, no error), or the update found a newer version.
 */
export async function writeReplica(tx: Db, mode: 'insert' | 'update', w: ReplicaWrite): Promise<boolean> {
  const v = valuesOf(w.snapshot, w.phoneNumber, w.now);
  const conflictPhone = sql`${w.conflict?.phoneNumber ?? null}::varchar`;
  const { rows } = await query<{ written: number }>(
    tx,
    sql`with w as (${upsert(mode, v, w.force ?? false)}),
    ${queueForIndex(v.now)},
    superseded as (
      update messenger.user_phone_conflicts
         set status = 'Resolved', resolution = 'Superseded', resolved_at = ${v.now}
       where user_id = ${v.id} and status = 'Open' and phone_number is distinct from ${conflictPhone} and exists (select 1 from w)
    ),
    conflict as (
      insert into messenger.user_phone_conflicts
        (id, user_id, phone_number, holder_user_id, identity_user_version, message_id, detected_at, last_seen_at)
      select ${newId()}::uuid, id, ${conflictPhone}, ${w.conflict?.holderUserId ?? null}::uuid, ${v.version}, ${w.messageId}::varchar, ${v.now}, ${v.now}
        from w where ${conflictPhone} is not null
      on conflict (user_id, phone_number) where status = 'Open' do update
        set holder_user_id = excluded.holder_user_id, identity_user_version = excluded.identity_user_version,
            message_id = excluded.message_id, occurrences = user_phone_conflicts.occurrences + 1,
            last_seen_at = excluded.last_seen_at
    )
    select count(*)::int as written, pg_notify('${sql.raw(CONTACT_SEARCH_WAKE_CHANNEL)}', '') from w`,
    { name: `messenger_user_write_${mode}` },
  );
  return rows[0]!.written > 0;
}

/**
 * A live row let go of `phoneNumber`: the oldest open conflict still wanting it (its user's
 * current snapshot asked for it, and the user is live) takes it, and the conflict closes as
 * PhoneReleased. This is what makes a replay converge when two users swapped phones across
 * partitions. Returns the user who took it and the phone that user let go of in turn, if any.
 */
export async function handOverReleasedPhone(
  tx: Db,
  phoneNumber: string,
  now: Date,
): Promise<{ userId: string; releasedPhone: string | null } | null> {
  const { rows } = await query<{ user_id: string; old_phone: string | null }>(
    tx,
    sql`
    with claim as (
      select c.id, c.user_id, c.identity_user_version, u.phone_number as old_phone
        from messenger.user_phone_conflicts c
        join messenger.users u on u.id = c.user_id
       where c.phone_number = ${phoneNumber} and c.status = 'Open'
         and u.identity_user_version = c.identity_user_version and u.is_active
         and not exists (select 1 from messenger.users h where h.phone_number = ${phoneNumber} and h.is_active)
       order by c.detected_at, c.id
       limit 1
    ),
    healed as (
      -- Re-checked on the newest row version if the user's row is being changed concurrently.
      update messenger.users u set phone_number = ${phoneNumber}, revision = u.revision + 1, updated_at = ${now}
        from claim
       where u.id = claim.user_id and u.identity_user_version = claim.identity_user_version and u.is_active
      returning u.id, u.revision
    ),
    resolved as (
      update messenger.user_phone_conflicts c
         set status = 'Resolved', resolution = 'PhoneReleased', resolved_at = ${now}
        from claim
       where c.id = claim.id and exists (select 1 from healed)
    ),
    pending as (
      insert into messenger.contact_search_pending (user_id, revision, enqueued_at, attempts, next_attempt_at)
      select id, revision, ${now}, 0, ${now} from healed
      on conflict (user_id) do update
        set revision = greatest(contact_search_pending.revision, excluded.revision),
            enqueued_at = excluded.enqueued_at, attempts = 0, next_attempt_at = excluded.next_attempt_at
    )
    select healed.id as user_id, claim.old_phone, pg_notify(${CONTACT_SEARCH_WAKE_CHANNEL}, '')
      from healed join claim on claim.user_id = healed.id`,
  );
  const r = rows[0];
  return r ? { userId: r.user_id, releasedPhone: r.old_phone === phoneNumber ? null : r.old_phone } : null;
}

/** True when `err` (or a cause, as drizzle wraps driver errors) is a unique violation of the live-phone index. */
export const isLivePhoneViolation = (err: unknown): boolean => isPgError(err, '23505', LIVE_PHONE_INDEX);
