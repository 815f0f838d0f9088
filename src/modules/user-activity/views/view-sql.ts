import type { Queryable } from '../../../platform/db/index.ts';
import type { CloseTransition } from '../rules.ts';

/** Raw SQL over user_activity.property_object_views; each function is one statement on the client given. */

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

/** A view with what its ended-event needs from its session (taken in the same statement: no N+1). */
export interface OwnedViewRow extends ViewRow {
  ownerAnonymousId: string;
  ownerUserId: string | null;
}

const COLUMNS = (t: string) => `${t}.id, ${t}.session_id as "sessionId", ${t}.property_object_id as "propertyObjectId",
  ${t}.view_source as "viewSource", ${t}.filter_snapshot as "filterSnapshot", ${t}.status, ${t}.created_at as "createdAt",
  ${t}.last_activity_at as "lastActivityAt", ${t}.ended_at as "endedAt", ${t}.duration_seconds as "durationSeconds"`;

/**
 * Phase A claim: hanging views — Active, idle since before `cutoff` — whose session is still live
 * (Active and not idle itself; views of stale sessions close with their session in phase B).
 * The view is locked FOR UPDATE and its session FOR SHARE, both SKIP LOCKED: the claim never waits,
 * so it cannot deadlock with writers that lock session then view, and the session's UserId cannot
 * change (link) until the payload carrying it is committed.
 */
export async function claimHangingViews(c: Queryable, cutoff: Date, limit: number, exclude: readonly string[]): Promise<OwnedViewRow[]> {
  const { rows } = await c.query<OwnedViewRow>(
    `select ${COLUMNS('v')}, s.anonymous_id as "ownerAnonymousId", s.user_id as "ownerUserId"
       from user_activity.property_object_views v
       join user_activity.sessions s on s.id = v.session_id
      where v.status = 'Active' and v.last_activity_at < $1
        and s.status = 'Active' and s.last_activity_at >= $1
        and not (v.id = any($3::uuid[]))
      order by v.last_activity_at
      limit $2
      for update of v skip locked
      for share of s skip locked`,
    [cutoff, limit, exclude],
  );
  return rows;
}

/** The one-view variant of claimHangingViews, for the row-by-row fallback. */
export async function claimHangingView(c: Queryable, id: string, cutoff: Date): Promise<OwnedViewRow | undefined> {
  const { rows } = await c.query<OwnedViewRow>(
    `select ${COLUMNS('v')}, s.anonymous_id as "ownerAnonymousId", s.user_id as "ownerUserId"
       from user_activity.property_object_views v
       join user_activity.sessions s on s.id = v.session_id
      where v.id = $1 and v.status = 'Active' and v.last_activity_at < $2
        and s.status = 'Active' and s.last_activity_at >= $2
      for update of v skip locked
      for share of s skip locked`,
    [id, cutoff],
  );
  return rows[0];
}

/** Ids of hanging views without taking locks (fallback when the batch claim itself failed). */
export async function hangingViewIds(c: Queryable, cutoff: Date, limit: number, exclude: readonly string[]): Promise<string[]> {
  const { rows } = await c.query<{ id: string }>(
    `select v.id from user_activity.property_object_views v
       join user_activity.sessions s on s.id = v.session_id
      where v.status = 'Active' and v.last_activity_at < $1
        and s.status = 'Active' and s.last_activity_at >= $1
        and not (v.id = any($3::uuid[]))
      order by v.last_activity_at limit $2`,
    [cutoff, limit, exclude],
  );
  return rows.map((r) => r.id);
}

/**
 * The open views of sessions the caller has locked, locked with a plain FOR UPDATE: SKIP LOCKED
 * would leave a view Active under an Inactive session (INV-LV-007). Waiting is safe — whoever holds
 * a view lock either never waits (the phase A claim) or already holds the session before it.
 */
export async function lockOpenViewsOfSessions(c: Queryable, sessionIds: readonly string[]): Promise<ViewRow[]> {
  if (sessionIds.length === 0) return [];
  const { rows } = await c.query<ViewRow>(
    `select ${COLUMNS('v')} from user_activity.property_object_views v
      where v.session_id = any($1::uuid[]) and v.status = 'Active'
      order by v.id
      for update`,
    [sessionIds],
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

export async function insertView(c: Queryable, v: NewView): Promise<ViewRow> {
  const { rows } = await c.query<ViewRow>(
    `insert into user_activity.property_object_views
       (id, session_id, property_object_id, view_source, filter_snapshot, status, created_at, last_activity_at)
     values ($1, $2, $3, $4, $5, 'Active', $6, $6)
     returning ${COLUMNS('property_object_views')}`,
    [v.id, v.sessionId, v.propertyObjectId, v.viewSource, v.filterSnapshot === undefined ? null : JSON.stringify(v.filterSnapshot), v.now],
  );
  return rows[0]!;
}

/** The view's session and the stored digest of that session's device secret; undefined: no such view. */
export async function viewSecretHash(c: Queryable, id: string): Promise<{ sessionId: string; deviceSecretHash: string | null } | undefined> {
  const { rows } = await c.query<{ sessionId: string; deviceSecretHash: string | null }>(
    `select v.session_id as "sessionId", s.device_secret_hash as "deviceSecretHash"
       from user_activity.property_object_views v join user_activity.sessions s on s.id = v.session_id
      where v.id = $1`,
    [id],
  );
  return rows[0];
}

/** View heartbeat: moves LastActivityAt forward on an Active view; nothing when it is Inactive. */
export async function touchActiveView(c: Queryable, id: string, now: Date): Promise<boolean> {
  const res = await c.query(
    `update user_activity.property_object_views set last_activity_at = greatest(last_activity_at, $2)
      where id = $1 and status = 'Active'`,
    [id, now],
  );
  return (res.rowCount ?? 0) === 1;
}

/** Applies close transitions set-based; the guard Status = Active makes a second close a no-op. */
export async function markViewsClosed(c: Queryable, closes: readonly CloseTransition[]): Promise<number> {
  if (closes.length === 0) return 0;
  const res = await c.query(
    `update user_activity.property_object_views v
        set status = 'Inactive', ended_at = d.ended_at, duration_seconds = d.duration_seconds
       from unnest($1::uuid[], $2::timestamptz[], $3::int[]) as d(id, ended_at, duration_seconds)
      where v.id = d.id and v.status = 'Active'`,
    [closes.map((t) => t.id), closes.map((t) => t.endedAt), closes.map((t) => t.durationSeconds)],
  );
  return res.rowCount ?? 0;
}

/** Active views idle since before `before` (all of them, whatever their session): backlog and stuck gauges. */
export async function countIdleActiveViews(c: Queryable, before: Date): Promise<number> {
  const { rows } = await c.query<{ n: string }>(
    `select count(*) as n from user_activity.property_object_views where status = 'Active' and last_activity_at < $1`,
    [before],
  );
  return Number(rows[0]?.n ?? 0);
}
