import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { CloseTransition } from '../rules.ts';
import type { StaleScope } from '../sessions/session-sql.ts';

/** Raw SQL over user_activity.property_object_views; each function is one statement on the handle given. */

export interface ViewRow {
  id: string;
  sessionId: string;
  propertyObjectId: string;
  viewSource: string;
  filterSnapshot: unknown;
  status: 'Active' | 'Inactive';
  createdAt: Date;
  lastActivityAt: Date;
  endedAt: Date | null;
  durationSeconds: number | null;
}

/**
 * Whether the session has at least `max` views (Active or not). Reads at most `max` index entries
 * (ix_property_object_views_session_id), so the check costs the same for a full session as for any.
 */
export async function sessionHasViews(db: Db, sessionId: string, max: number): Promise<boolean> {
  const { rows } = await query<{ n: number }>(
    db,
    sql`select count(*)::int as n from (select 1 from user_activity.property_object_views where session_id = ${sessionId} limit ${max}) v`,
  );
  return rows[0]!.n >= max;
}

/** A view with what its ended-event needs from its session (taken in the same statement: no N+1). */
export interface OwnedViewRow extends ViewRow {
  ownerAnonymousId: string;
  ownerUserId: string | null;
}

const COLUMNS = (t: string) =>
  sql.raw(`${t}.id, ${t}.session_id as "sessionId", ${t}.property_object_id as "propertyObjectId",
  ${t}.view_source as "viewSource", ${t}.filter_snapshot as "filterSnapshot", ${t}.status, ${t}.created_at as "createdAt",
  ${t}.last_activity_at as "lastActivityAt", ${t}.ended_at as "endedAt", ${t}.duration_seconds as "durationSeconds"`);

/**
 * Phase A claim: hanging views — Active, idle since before `cutoff` — whose session is still live
 * (Active and not idle itself; views of stale sessions close with their session in phase B).
 * The view is locked FOR UPDATE and its session FOR SHARE, both SKIP LOCKED: the claim never waits,
 * so it cannot deadlock with writers that lock session then view, and the session's UserId cannot
 * change (link) until the payload carrying it is committed. `scope` as for claimStaleSessions.
 */
export async function claimHangingViews(db: Db, scope: StaleScope): Promise<OwnedViewRow[]> {
  const { cutoff, limit, exclude = [], id, lock = true } = scope;
  const { rows } = await query<OwnedViewRow>(
    db,
    sql`select ${COLUMNS('v')}, s.anonymous_id as "ownerAnonymousId", s.user_id as "ownerUserId"
       from user_activity.property_object_views v
       join user_activity.sessions s on s.id = v.session_id
      where v.status = 'Active' and v.last_activity_at < ${cutoff}
        and s.status = 'Active' and s.last_activity_at >= ${cutoff}
        and not (v.id = any(${sql.param(exclude)}::uuid[]))
        ${id === undefined ? sql`` : sql`and v.id = ${id}`}
      order by v.last_activity_at
      limit ${limit}
      ${lock ? sql`for update of v skip locked for share of s skip locked` : sql``}`,
  );
  return rows;
}

/**
 * The open views of sessions the caller has locked, locked with a plain FOR UPDATE: SKIP LOCKED
 * would leave a view Active under an Inactive session (INV-LV-007). Waiting is safe — whoever holds
 * a view lock either never waits (the phase A claim) or already holds the session before it.
 */
export async function lockOpenViewsOfSessions(db: Db, sessionIds: readonly string[]): Promise<ViewRow[]> {
  if (sessionIds.length === 0) return [];
  const { rows } = await query<ViewRow>(
    db,
    sql`select ${COLUMNS('v')} from user_activity.property_object_views v
      where v.session_id = any(${sql.param(sessionIds)}::uuid[]) and v.status = 'Active'
      order by v.id
      for update`,
  );
  return rows;
}

export interface NewView {
  id: string;
  sessionId: string;
  propertyObjectId: string;
  viewSource: string;
  filterSnapshot: unknown;
  now: Date;
}

export async function insertView(db: Db, v: NewView): Promise<ViewRow> {
  const filterSnapshot = v.filterSnapshot === undefined ? null : JSON.stringify(v.filterSnapshot);
  const { rows } = await query<ViewRow>(
    db,
    sql`insert into user_activity.property_object_views
       (id, session_id, property_object_id, view_source, filter_snapshot, status, created_at, last_activity_at)
     values (${v.id}, ${v.sessionId}, ${v.propertyObjectId}, ${v.viewSource}, ${filterSnapshot}, 'Active', ${v.now}, ${v.now})
     returning ${COLUMNS('property_object_views')}`,
  );
  return rows[0]!;
}

/** The view's session and the stored digest of that session's device secret; undefined: no such view. */
export async function viewSecretHash(db: Db, id: string): Promise<{ sessionId: string; deviceSecretHash: string | null } | undefined> {
  const { rows } = await query<{ sessionId: string; deviceSecretHash: string | null }>(
    db,
    sql`select v.session_id as "sessionId", s.device_secret_hash as "deviceSecretHash"
       from user_activity.property_object_views v join user_activity.sessions s on s.id = v.session_id
      where v.id = ${id}`,
  );
  return rows[0];
}

/** View heartbeat: moves LastActivityAt forward on an Active view; nothing when it is Inactive. */
export async function touchActiveView(db: Db, id: string, now: Date): Promise<boolean> {
  const { rowCount } = await query(
    db,
    sql`update user_activity.property_object_views set last_activity_at = greatest(last_activity_at, ${now})
      where id = ${id} and status = 'Active'`,
  );
  return rowCount === 1;
}

/** Applies close transitions set-based; the guard Status = Active makes a second close a no-op. */
export async function markViewsClosed(db: Db, closes: readonly CloseTransition[]): Promise<number> {
  if (closes.length === 0) return 0;
  const { rowCount } = await query(
    db,
    sql`update user_activity.property_object_views v
        set status = 'Inactive', ended_at = d.ended_at, duration_seconds = d.duration_seconds
       from unnest(${sql.param(closes.map((t) => t.id))}::uuid[], ${sql.param(closes.map((t) => t.endedAt))}::timestamptz[],
                   ${sql.param(closes.map((t) => t.durationSeconds))}::int[]) as d(id, ended_at, duration_seconds)
      where v.id = d.id and v.status = 'Active'`,
  );
  return rowCount;
}

/** Active views idle since before `before` (all of them, whatever their session): the closer's backlog. */
export async function countIdleActiveViews(db: Db, before: Date): Promise<number> {
  const { rows } = await query<{ n: string }>(
    db,
    sql`select count(*) as n from user_activity.property_object_views where status = 'Active' and last_activity_at < ${before}`,
  );
  return Number(rows[0]?.n ?? 0);
}
