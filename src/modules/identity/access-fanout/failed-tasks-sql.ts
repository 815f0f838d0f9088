import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { keysetAfter, keysetOrder, type FailureCursor } from '../../../platform/ops/index.ts';
import { COLUMNS, notifyWorkers, toTask, type FanOutTask, type TaskRow } from './fanout-sql.ts';

/**
 * Failed fan-out tasks (poison: MaxAttempts used up) and their replay (runbook "access fan-out
 * replay"): one by id for the runbook call, or those a filter matches for the ops console — the
 * same statement either way.
 */

/** Which Failed tasks; every field given narrows the set. The range is on when the task failed (UpdatedAt). */
export interface FailedTaskFilter {
  id?: string;
  ids?: readonly string[];
  roleId?: string;
  companyId?: string;
  parentId?: string;
  /** LastError starts with this text (compared as text, no pattern characters). */
  lastErrorPrefix?: string;
  failedFrom?: Date;
  failedBefore?: Date;
}

const failedWhere = (f: FailedTaskFilter) => sql`status = 'Failed'
     ${f.id === undefined ? sql`` : sql`and id = ${f.id}`}
     ${f.ids === undefined ? sql`` : sql`and id = any(${sql.param(f.ids)}::uuid[])`}
     ${f.roleId === undefined ? sql`` : sql`and role_id = ${f.roleId}`}
     ${f.companyId === undefined ? sql`` : sql`and company_id = ${f.companyId}`}
     ${f.parentId === undefined ? sql`` : sql`and parent_id = ${f.parentId}`}
     ${f.lastErrorPrefix === undefined ? sql`` : sql`and starts_with(last_error, ${f.lastErrorPrefix}::text)`}
     ${f.failedFrom === undefined ? sql`` : sql`and updated_at >= ${f.failedFrom}`}
     ${f.failedBefore === undefined ? sql`` : sql`and updated_at < ${f.failedBefore}`}`;

/** A Failed task as the ops console lists it: with the traceparent of the role change that queued it. */
export type FailedTask = FanOutTask & { traceparent: string | null };

/** Failed tasks matching the filter, oldest failure first (the order the replay takes them in). */
export async function listFailedTasks(q: Db, f: FailedTaskFilter, limit: number, after?: FailureCursor): Promise<FailedTask[]> {
  const at = sql`updated_at`;
  const { rows } = await query<TaskRow & { traceparent: string | null }>(q, sql`
    select ${COLUMNS}, traceparent from identity.access_fanout_tasks where ${failedWhere(f)} ${keysetAfter(at, after)} order by ${keysetOrder(at)} limit ${limit}`);
  return rows.map((r) => ({ ...toTask(r), traceparent: r.traceparent }));
}

export async function countFailedTasks(q: Db, f: FailedTaskFilter): Promise<number> {
  const { rows } = await query<{ n: number }>(q, sql`select count(*)::int as n from identity.access_fanout_tasks where ${failedWhere(f)}`);
  return rows[0]?.n ?? 0;
}

/**
 * Runbook "access fan-out replay": up to `limit` matching Failed tasks, oldest failure first, →
 * Pending with AttemptCount 0; each resumes from its Cursor. Wakes the workers when any changed.
 */
export async function replayFailedTasks(tx: Db, f: FailedTaskFilter, limit: number, now: Date): Promise<FanOutTask[]> {
  const { rows } = await query<TaskRow>(tx, sql`
    with picked as (
      select id from identity.access_fanout_tasks where ${failedWhere(f)} order by updated_at, id limit ${limit} for update skip locked)
    update identity.access_fanout_tasks
       set status = 'Pending', attempt_count = 0, lease_expires_at = null, last_error = null, updated_at = ${now}
     where id in (select id from picked)
    returning ${COLUMNS}`);
  if (rows.length > 0) await notifyWorkers(tx);
  return rows.map(toTask);
}
