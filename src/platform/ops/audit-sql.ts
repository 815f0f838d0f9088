import { sql } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import type { AdminAuditSink } from '../http/index.ts';
import { newId, type Clock } from '../time.ts';

/**
 * platform.ops_audit: one row per action through /api/ops and per admin action or refusal anywhere
 * (who, what, filter, count, when, what the caller was answered).
 */

export interface AuditEntry {
  id: string;
  at: Date;
  actor: string;
  role: string;
  action: string;
  target: string;
  filter: Record<string, unknown>;
  dryRun: boolean;
  matched: number | null;
  changed: number;
  status: 'running' | 'done' | 'failed' | 'refused';
  finishedAt: Date | null;
  error: string | null;
  /** The HTTP status the caller was answered; null on rows written before it was kept. */
  httpStatus: number | null;
}

export type NewAuditEntry = Pick<AuditEntry, 'id' | 'at' | 'actor' | 'role' | 'action' | 'target' | 'filter' | 'dryRun' | 'matched' | 'changed' | 'status'> &
  Partial<Pick<AuditEntry, 'finishedAt' | 'error' | 'httpStatus'>> & {
    /** A bulk run: the replica that runs it (its sign of life starts now). */
    holder?: string;
  };

/**
 * PostgreSQL stores no U+0000 in text or jsonb: a refused request's hostile parameters (a NUL in a
 * string) would make its audit row fail to be written. Each NUL is kept visible as ␀ instead.
 */
const NUL = /\u0000/g;
const clean = (v: unknown): unknown =>
  typeof v === 'string' ? v.replace(NUL, '␀')
  : Array.isArray(v) ? v.map(clean)
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(NUL, '␀'), clean(x)]))
  : v;
const storable = (filter: Record<string, unknown>): string => JSON.stringify(clean(filter));

export async function insertAudit(db: Db, e: NewAuditEntry): Promise<void> {
  await query(
    db,
    sql`insert into platform.ops_audit (id, at, actor, role, action, target, filter, dry_run, matched, changed, status, finished_at, error, http_status, holder, beat_at)
        values (${e.id}, ${e.at}, ${e.actor.slice(0, 100)}, ${e.role}, ${e.action.slice(0, 50)}, ${e.target.replace(NUL, '␀').slice(0, 200)}, ${storable(e.filter)}::jsonb, ${e.dryRun},
                ${e.matched}, ${e.changed}, ${e.status}, ${e.finishedAt ?? null}, ${e.error?.replace(NUL, '␀').slice(0, 512) ?? null}, ${e.httpStatus ?? null},
                ${e.holder ?? null}, case when ${e.holder ?? null}::text is null then null else now() end)`,
  );
}

/**
 * A bulk action's progress, then its end (status done / failed with the error). Each is also its
 * sign of life (beat_at). Only a running row changes: one the stale sweep already ended stays failed
 * (false: the run stops).
 */
export async function updateAudit(db: Db, id: string, changes: { changed: number; status?: AuditEntry['status']; finishedAt?: Date; error?: string }): Promise<boolean> {
  const { rows } = await query(
    db,
    sql`update platform.ops_audit set changed = ${changes.changed}, status = coalesce(${changes.status ?? null}, status), beat_at = now(),
               finished_at = coalesce(${changes.finishedAt ?? null}::timestamptz, finished_at), error = coalesce(${changes.error?.slice(0, 512) ?? null}, error)
         where id = ${id} and status = 'running' returning id`,
  );
  return rows.length > 0;
}

/** A running bulk action's sign of life between its statements (one statement may take long). */
export async function beatAudit(db: Db, id: string): Promise<void> {
  await query(db, sql`update platform.ops_audit set beat_at = now() where id = ${id} and status = 'running'`);
}

/**
 * Ends as failed every running bulk action whose runner gave no sign of life for `staleMs` by the
 * database's clock (the same clock for every replica): its process was killed, or lost the
 * database. A live runner beats far more often, so no replica's running action is taken. A row from
 * before beats were kept is dated by its start. Returns the ids it ended.
 */
export async function failStaleRuns(db: Db, staleMs: number, finishedAt: Date): Promise<string[]> {
  const { rows } = await query<{ id: string }>(
    db,
    sql`update platform.ops_audit set status = 'failed', finished_at = ${finishedAt},
               error = 'stopped: its runner (' || coalesce(holder, 'unknown') || ') gave no sign of life for ' || ${Math.round(staleMs / 1000)}::int || ' s (its process ended mid-run); rows it changed stay changed'
         where status = 'running' and coalesce(beat_at, at) < now() - make_interval(secs => ${staleMs / 1000}::float8)
         returning id`,
  );
  return rows.map((r) => r.id);
}

/** Where the HTTP kernel's admin audit hook writes: one finished row per admin action or refusal. */
export function adminAuditSink(db: Db, clock: Clock): AdminAuditSink {
  return async (r) => {
    const at = clock.now();
    await insertAudit(db, {
      id: newId(),
      at,
      actor: r.actor,
      role: r.role,
      action: r.action,
      target: r.target,
      filter: r.params,
      dryRun: r.dryRun,
      matched: null,
      changed: 0,
      status: r.outcome,
      finishedAt: at,
      httpStatus: r.httpStatus,
      ...(r.error ? { error: r.error } : {}),
    });
  };
}

const COLUMNS = sql`id, at, actor, role, action, target, filter, dry_run as "dryRun", matched, changed, status, finished_at as "finishedAt", error, http_status as "httpStatus"`;

/** Newest first, keyset-paged by (at, id): `after` is the last entry of the previous page; `before` a time to start from. */
export async function listAudit(db: Db, limit: number, before?: Date, after?: { at: Date; id: string }): Promise<AuditEntry[]> {
  const { rows } = await query<AuditEntry>(
    db,
    sql`select ${COLUMNS} from platform.ops_audit where (${before ?? null}::timestamptz is null or at < ${before ?? null}::timestamptz)
         ${after ? sql`and (at, id) < (${after.at.toISOString()}::timestamptz, ${after.id}::uuid)` : sql``}
         order by at desc, id desc limit ${limit}`,
  );
  return rows;
}

export async function readAudit(db: Db, id: string): Promise<AuditEntry | undefined> {
  const { rows } = await query<AuditEntry>(db, sql`select ${COLUMNS} from platform.ops_audit where id = ${id}`);
  return rows[0];
}
