import type { Queryable } from '../../../platform/db/index.ts';
import type { CloseTransition, SessionEndReason } from '../rules.ts';

/** Raw SQL over user_activity.sessions; each function is one statement on the client given. */

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

const COLUMNS = `id, anonymous_id as "anonymousId", user_id as "userId", status, end_reason as "endReason",
  created_at as "createdAt", last_activity_at as "lastActivityAt", ended_at as "endedAt", duration_seconds as "durationSeconds"`;

/**
 * Phase B claim: Active sessions idle since before `cutoff`, oldest first, locked FOR UPDATE SKIP
 * LOCKED so parallel closers (and a heartbeat holding a row) never meet. A heartbeat that committed
 * meanwhile moved LastActivityAt past the cutoff, and the re-check on lock drops the row.
 */
export async function claimStaleSessions(c: Queryable, cutoff: Date, limit: number, exclude: readonly string[]): Promise<SessionRow[]> {
  const { rows } = await c.query<SessionRow>(
    `select ${COLUMNS} from user_activity.sessions
      where status = 'Active' and last_activity_at < $1 and not (id = any($3::uuid[]))
      order by last_activity_at
      limit $2
      for update skip locked`,
    [cutoff, limit, exclude],
  );
  return rows;
}

/** The one-session variant of claimStaleSessions, for the row-by-row fallback. */
export async function claimStaleSession(c: Queryable, id: string, cutoff: Date): Promise<SessionRow | undefined> {
  const { rows } = await c.query<SessionRow>(
    `select ${COLUMNS} from user_activity.sessions
      where id = $1 and status = 'Active' and last_activity_at < $2
      for update skip locked`,
    [id, cutoff],
  );
  return rows[0];
}

/** Ids of stale sessions without taking locks (fallback when the batch claim itself failed). */
export async function staleSessionIds(c: Queryable, cutoff: Date, limit: number, exclude: readonly string[]): Promise<string[]> {
  const { rows } = await c.query<{ id: string }>(
    `select id from user_activity.sessions
      where status = 'Active' and last_activity_at < $1 and not (id = any($3::uuid[]))
      order by last_activity_at limit $2`,
    [cutoff, limit, exclude],
  );
  return rows.map((r) => r.id);
}

export async function getSession(c: Queryable, id: string): Promise<SessionRow | undefined> {
  const { rows } = await c.query<SessionRow>(`select ${COLUMNS} from user_activity.sessions where id = $1`, [id]);
  return rows[0];
}

/** Locks the session (first in every writer's lock order: session, then its views). */
export async function lockSession(c: Queryable, id: string): Promise<SessionRow | undefined> {
  const { rows } = await c.query<SessionRow>(`select ${COLUMNS} from user_activity.sessions where id = $1 for update`, [id]);
  return rows[0];
}

/**
 * The Active session of a device — its AnonymousId and the digest of the secret that proves it
 * (ux_sessions_active_device). Another device's session of the same AnonymousId is never matched.
 */
export async function lockActiveSessionOfDevice(c: Queryable, anonymousId: string, deviceSecretHash: string): Promise<SessionRow | undefined> {
  const { rows } = await c.query<SessionRow>(
    `select ${COLUMNS} from user_activity.sessions
      where anonymous_id = $1 and device_secret_hash = $2 and status = 'Active' for update`,
    [anonymousId, deviceSecretHash],
  );
  return rows[0];
}

/** The stored digest of a session's device secret (null: started before device secrets); undefined: no such session. */
export async function sessionSecretHash(c: Queryable, id: string): Promise<{ deviceSecretHash: string | null } | undefined> {
  const { rows } = await c.query<{ deviceSecretHash: string | null }>(
    `select device_secret_hash as "deviceSecretHash" from user_activity.sessions where id = $1`,
    [id],
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
export async function insertSession(c: Queryable, s: NewSession): Promise<SessionRow | undefined> {
  const { rows } = await c.query<SessionRow>(
    `insert into user_activity.sessions
       (id, anonymous_id, user_id, device_user_agent, device_ip_address, device_secret_hash, status, created_at, last_activity_at)
     values ($1, $2, $3, $4, $5, $6, 'Active', $7, $7)
     on conflict (anonymous_id, device_secret_hash) where status = 'Active' do nothing
     returning ${COLUMNS}`,
    [s.id, s.anonymousId, s.userId, s.userAgent, s.ipAddress, s.deviceSecretHash, s.now],
  );
  return rows[0];
}

/** Device data of a session, for a restart or a switch on the same device. */
export async function sessionDevice(c: Queryable, id: string): Promise<{ userAgent: string | null; ipAddress: string | null }> {
  const { rows } = await c.query<{ userAgent: string | null; ipAddress: string | null }>(
    `select device_user_agent as "userAgent", host(device_ip_address) as "ipAddress" from user_activity.sessions where id = $1`,
    [id],
  );
  return rows[0] ?? { userAgent: null, ipAddress: null };
}

/** Heartbeat: moves LastActivityAt forward on an Active session; nothing when it is not Active. */
export async function touchActiveSession(c: Queryable, id: string, now: Date): Promise<SessionRow | undefined> {
  const { rows } = await c.query<SessionRow>(
    `update user_activity.sessions set last_activity_at = greatest(last_activity_at, $2)
      where id = $1 and status = 'Active'
      returning ${COLUMNS}`,
    [id, now],
  );
  return rows[0];
}

export async function setSessionUser(c: Queryable, id: string, userId: string, now: Date): Promise<SessionRow | undefined> {
  const { rows } = await c.query<SessionRow>(
    `update user_activity.sessions set user_id = $2, last_activity_at = greatest(last_activity_at, $3)
      where id = $1 and status = 'Active'
      returning ${COLUMNS}`,
    [id, userId, now],
  );
  return rows[0];
}

/** Applies close transitions set-based; the guard Status = Active makes a second close a no-op. */
export async function markSessionsClosed(c: Queryable, closes: readonly CloseTransition[], reason: SessionEndReason): Promise<number> {
  if (closes.length === 0) return 0;
  const res = await c.query(
    `update user_activity.sessions s
        set status = 'Inactive', end_reason = $4, ended_at = d.ended_at, duration_seconds = d.duration_seconds
       from unnest($1::uuid[], $2::timestamptz[], $3::int[]) as d(id, ended_at, duration_seconds)
      where s.id = d.id and s.status = 'Active'`,
    [closes.map((t) => t.id), closes.map((t) => t.endedAt), closes.map((t) => t.durationSeconds), reason],
  );
  return res.rowCount ?? 0;
}

/** Stale Active sessions (LastActivityAt before `before`): the backlog and stuck gauges. */
export async function countIdleActiveSessions(c: Queryable, before: Date): Promise<number> {
  const { rows } = await c.query<{ n: string }>(
    `select count(*) as n from user_activity.sessions where status = 'Active' and last_activity_at < $1`,
    [before],
  );
  return Number(rows[0]?.n ?? 0);
}
