import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { CloseTransition, SessionEndReason } from '../rules.ts';

/** Raw SQL over user_activity.sessions; each function is one statement on the handle given. */

export interface SessionRow {
  id: string;
  anonymousId: string;
  userId: string | null;
  status: 'Active' | 'Inactive';
  endReason: SessionEndReason | null;
  createdAt: Date;
  lastActivityAt: Date;
  endedAt: Date | null;
  durationSeconds: number | null;
}

const COLUMNS = sql.raw(`id, anonymous_id as "anonymousId", user_id as "userId", status, end_reason as "endReason",
  created_at as "createdAt", last_activity_at as "lastActivityAt", ended_at as "endedAt", duration_seconds as "durationSeconds"`);

/** Which rows a closer claim reads: up to `limit` idle since before `cutoff`, or only the row `id`; `exclude` is left alone. */
export interface StaleScope {
  cutoff: Date;
  limit: number;
  exclude?: readonly string[];
  /** The one row of the one-by-one redo. */
  id?: string;
  /** FOR UPDATE SKIP LOCKED (the claim); false reads the ids a failed batch would have taken. Default true. */
  lock?: boolean;
}

/**
 * Phase B claim: Active sessions idle since before `cutoff`, oldest first, locked FOR UPDATE SKIP
 * LOCKED so parallel closers (and a heartbeat holding a row) never meet. A heartbeat that committed
 * meanwhile moved LastActivityAt past the cutoff, and the re-check on lock drops the row.
 */
export async function claimStaleSessions(db: Db, scope: StaleScope): Promise<SessionRow[]> {
  const { cutoff, limit, exclude = [], id, lock = true } = scope;
  const { rows } = await query<SessionRow>(
    db,
    sql`select ${COLUMNS} from user_activity.sessions
      where status = 'Active' and last_activity_at < ${cutoff} and not (id = any(${sql.param(exclude)}::uuid[]))
        ${id === undefined ? sql`` : sql`and id = ${id}`}
      order by last_activity_at
      limit ${limit}
      ${lock ? sql`for update skip locked` : sql``}`,
  );
  return rows;
}

export async function getSession(db: Db, id: string): Promise<SessionRow | undefined> {
  const { rows } = await query<SessionRow>(db, sql`select ${COLUMNS} from user_activity.sessions where id = ${id}`);
  return rows[0];
}

/** Locks the session (first in every writer's lock order: session, then its views). */
export async function lockSession(db: Db, id: string): Promise<SessionRow | undefined> {
  const { rows } = await query<SessionRow>(db, sql`select ${COLUMNS} from user_activity.sessions where id = ${id} for update`);
  return rows[0];
}

/**
 * The Active session of a device — its AnonymousId and the digest of the secret that proves it
 * (ux_sessions_active_device). Another device's session of the same AnonymousId is never matched.
 */
export async function lockActiveSessionOfDevice(db: Db, anonymousId: string, deviceSecretHash: string): Promise<SessionRow | undefined> {
  const { rows } = await query<SessionRow>(
    db,
    sql`select ${COLUMNS} from user_activity.sessions
      where anonymous_id = ${anonymousId} and device_secret_hash = ${deviceSecretHash} and status = 'Active' for update`,
  );
  return rows[0];
}

/** The stored digest of a session's device secret (null: started before device secrets); undefined: no such session. */
export async function sessionSecretHash(db: Db, id: string): Promise<{ deviceSecretHash: string | null } | undefined> {
  const { rows } = await query<{ deviceSecretHash: string | null }>(
    db,
    sql`select device_secret_hash as "deviceSecretHash" from user_activity.sessions where id = ${id}`,
  );
  return rows[0];
}

export interface NewSession {
  id: string;
  anonymousId: string;
  userId: string | null;
  userAgent: string | null;
  ipAddress: string | null;
  /** SHA-256 (hex) of the device secret: a fresh one, or the proven one of the session this one follows. */
  deviceSecretHash: string;
  now: Date;
}

/**
 * Starts an Active session; returns undefined when the device already has one (the partial unique
 * index ux_sessions_active_device decides, so concurrent starts cannot both win).
 */
export async function insertSession(db: Db, s: NewSession): Promise<SessionRow | undefined> {
  const { rows } = await query<SessionRow>(
    db,
    sql`insert into user_activity.sessions
       (id, anonymous_id, user_id, device_user_agent, device_ip_address, device_secret_hash, status, created_at, last_activity_at)
     values (${s.id}, ${s.anonymousId}, ${s.userId}, ${s.userAgent}, ${s.ipAddress}, ${s.deviceSecretHash}, 'Active', ${s.now}, ${s.now})
     on conflict (anonymous_id, device_secret_hash) where status = 'Active' do nothing
     returning ${COLUMNS}`,
  );
  return rows[0];
}

/** Device data of a session, for a restart or a switch on the same device. */
export async function sessionDevice(db: Db, id: string): Promise<{ userAgent: string | null; ipAddress: string | null }> {
  const { rows } = await query<{ userAgent: string | null; ipAddress: string | null }>(
    db,
    sql`select device_user_agent as "userAgent", host(device_ip_address) as "ipAddress" from user_activity.sessions where id = ${id}`,
  );
  return rows[0] ?? { userAgent: null, ipAddress: null };
}

/** Heartbeat: moves LastActivityAt forward on an Active session; nothing when it is not Active. */
export async function touchActiveSession(db: Db, id: string, now: Date): Promise<SessionRow | undefined> {
  const { rows } = await query<SessionRow>(
    db,
    sql`update user_activity.sessions set last_activity_at = greatest(last_activity_at, ${now})
      where id = ${id} and status = 'Active'
      returning ${COLUMNS}`,
  );
  return rows[0];
}

export async function setSessionUser(db: Db, id: string, userId: string, now: Date): Promise<SessionRow | undefined> {
  const { rows } = await query<SessionRow>(
    db,
    sql`update user_activity.sessions set user_id = ${userId}, last_activity_at = greatest(last_activity_at, ${now})
      where id = ${id} and status = 'Active'
      returning ${COLUMNS}`,
  );
  return rows[0];
}

/** Applies close transitions set-based; the guard Status = Active makes a second close a no-op. */
export async function markSessionsClosed(db: Db, closes: readonly CloseTransition[], reason: SessionEndReason): Promise<number> {
  if (closes.length === 0) return 0;
  const { rowCount } = await query(
    db,
    sql`update user_activity.sessions s
        set status = 'Inactive', end_reason = ${reason}, ended_at = d.ended_at, duration_seconds = d.duration_seconds
       from unnest(${sql.param(closes.map((t) => t.id))}::uuid[], ${sql.param(closes.map((t) => t.endedAt))}::timestamptz[],
                   ${sql.param(closes.map((t) => t.durationSeconds))}::int[]) as d(id, ended_at, duration_seconds)
      where s.id = d.id and s.status = 'Active'`,
  );
  return rowCount;
}

/** Stale Active sessions (LastActivityAt before `before`): the closer's backlog. */
export async function countIdleActiveSessions(db: Db, before: Date): Promise<number> {
  const { rows } = await query<{ n: string }>(
    db,
    sql`select count(*) as n from user_activity.sessions where status = 'Active' and last_activity_at < ${before}`,
  );
  return Number(rows[0]?.n ?? 0);
}

/** Stale Active sessions and Active views (whatever their session) in one statement: the stuck gauge, read at every scrape. */
export async function countIdleActiveRows(db: Db, before: Date): Promise<{ sessions: number; views: number }> {
  const { rows } = await query<{ sessions: string; views: string }>(
    db,
    sql`select (select count(*) from user_activity.sessions where status = 'Active' and last_activity_at < ${before}) as sessions,
               (select count(*) from user_activity.property_object_views where status = 'Active' and last_activity_at < ${before}) as views`,
  );
  return { sessions: Number(rows[0]?.sessions ?? 0), views: Number(rows[0]?.views ?? 0) };
}
