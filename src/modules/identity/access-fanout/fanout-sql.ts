import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { currentTraceparent } from '../../../platform/observability/index.ts';

/**
 * Raw SQL of the AccessFanOutTask queue (identity.access_fanout_tasks). The holder of a task is
 * fenced by its AttemptCount: every write a worker makes to its task carries
 * `attempt_count = <the attempt it claimed>`, so once a lease expired and another worker took the
 * task over (AttemptCount + 1), the first worker's writes match no row.
 *
 * A graceful stop is not an attempt (seed 003: AttemptCount is the lease/retry count behind
 * poison → Failed at MaxAttempts; a stop is neither a failure nor a retry): the holder hands the
 * task back as Pending with its AttemptCount, and the next claim takes it without adding one.
 * Sharing the token is safe, as the releaser has nothing in flight and writes nothing more; a
 * stale holder of an older attempt still matches no row, because the count never goes back (a
 * decrement would hand a stale holder its token back).
 */

export type FanOutTaskStatus = 'Pending' | 'InProgress' | 'Completed' | 'Failed';
export const FANOUT_TASK_STATUSES: readonly FanOutTaskStatus[] = ['Pending', 'InProgress', 'Completed', 'Failed'];

/** NOTIFY channel: a queued or replayed task wakes the worker at once. */
export const ACCESS_FANOUT_CHANNEL = 'identity_access_fanout';

export interface FanOutTask {
  id: string;
  roleId: string;
  companyId: string | null;
  roleVersion: number;
  reason: 'RolePermissionsChanged';
  status: FanOutTaskStatus;
  cursor: string | null;
  /** Last UserId (inclusive) of the task's range; null = to the end of the role. */
  rangeEnd: string | null;
  /** The task this sub-task was split from; null for a queued task. */
  parentId: string | null;
  processedCount: number;
  attemptCount: number;
  leaseExpiresAt: Date | null;
  lastError: string | null;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  updatedAt: Date;
}

export const COLUMNS = sql.raw(`id, role_id as "roleId", company_id as "companyId", role_version::text as "roleVersion", reason,
  status, cursor, range_end as "rangeEnd", parent_id as "parentId", processed_count as "processedCount", attempt_count as "attemptCount",
  lease_expires_at as "leaseExpiresAt", last_error as "lastError", created_at as "createdAt",
  started_at as "startedAt", completed_at as "completedAt", updated_at as "updatedAt"`);

// RoleVersion is a bigint, which pg hands over as text.
export type TaskRow = Omit<FanOutTask, 'roleVersion'> & { roleVersion: string };
export const toTask = (r: TaskRow): FanOutTask => ({ ...r, roleVersion: Number(r.roleVersion) });

const ms = (n: number) => sql`(${n}::bigint * interval '1 millisecond')`;

/** Wakes the workers' LISTEN at once (delivered when the caller's transaction commits). */
export async function notifyWorkers(tx: Db): Promise<void> {
  await query(tx, sql`select pg_notify(${ACCESS_FANOUT_CHANNEL}, '')`);
}

/**
 * Queues a fan-out task (Pending) in the role change's transaction, with that change's traceparent
 * (null while tracing is off), so the ops console links the task to it should the task fail.
 */
export async function insertFanOutTask(
  tx: Db,
  t: { id: string; roleId: string; companyId: string | null; roleVersion: number; now: Date },
): Promise<void> {
  await query(
    tx,
    sql`insert into identity.access_fanout_tasks (id, role_id, company_id, role_version, reason, status, created_at, updated_at, traceparent)
        values (${t.id}, ${t.roleId}, ${t.companyId}, ${t.roleVersion}, 'RolePermissionsChanged', 'Pending', ${t.now}, ${t.now}, ${currentTraceparent()}::varchar)`,
  );
  await notifyWorkers(tx);
}

/**
 * Takes the oldest task that is Pending or InProgress with an expired lease, skipping tasks other
 * workers hold: InProgress, lease = now + lease, AttemptCount + 1, StartedAt on the first take.
 * A task that already used MaxAttempts leases becomes Failed instead (returned so it is reported).
 * A task released by a graceful stop (Pending with AttemptCount > 0: new and replayed tasks have 0)
 * resumes under the same AttemptCount and is never poisoned by the claim. Tasks in `exclude`
 * (failed earlier in this run) are left alone.
 */
export async function claimNextTask(
  q: Db,
  c: { now: Date; leaseMs: number; maxAttempts: number; exclude?: readonly string[] },
): Promise<FanOutTask | null> {
  const { now, leaseMs, maxAttempts } = c;
  const { rows } = await query<TaskRow>(q, sql`
    with next as (
      select id from identity.access_fanout_tasks
       where (status = 'Pending' or (status = 'InProgress' and lease_expires_at <= ${now}))
         and not (id = any(${sql.param(c.exclude ?? [])}::uuid[]))
       order by created_at, id
       limit 1
       for update skip locked
    ), decided as (
      select t.id as task_id, r.resumed, not r.resumed and t.attempt_count >= ${maxAttempts} as poison
        from identity.access_fanout_tasks t join next using (id),
             lateral (select t.status = 'Pending' and t.attempt_count > 0 as resumed) r
    )
    update identity.access_fanout_tasks t
       set status = case when d.poison then 'Failed' else 'InProgress' end,
           attempt_count = case when d.poison or d.resumed then t.attempt_count else t.attempt_count + 1 end,
           lease_expires_at = case when d.poison then null else ${now}::timestamptz + ${ms(leaseMs)} end,
           last_error = case when d.poison then left(coalesce(t.last_error, 'lease expired') || ' (max attempts reached)', 512) else t.last_error end,
           started_at = coalesce(t.started_at, ${now}),
           updated_at = ${now}
      from decided d
     where t.id = d.task_id
    returning ${COLUMNS}`);
  return rows[0] ? toTask(rows[0]) : null;
}

/**
 * The checkpoint of one page, written in the page's transaction with its events: Cursor,
 * ProcessedCount, Completed on the last page, and a renewed lease. Fenced: null when this worker
 * no longer holds the task (the caller must roll back the page).
 */
export async function checkpointTask(
  tx: Db,
  c: { id: string; attempt: number; cursor: string | null; processed: number; completed: boolean; now: Date; leaseMs: number; rangeEnd?: string },
): Promise<FanOutTask | null> {
  const { rows } = await query<TaskRow>(tx, sql`
    update identity.access_fanout_tasks
       set cursor = ${c.cursor},
           range_end = coalesce(${c.rangeEnd ?? null}::uuid, range_end),
           processed_count = processed_count + ${c.processed},
           status = ${c.completed ? 'Completed' : 'InProgress'},
           completed_at = ${c.completed ? c.now : null},
           lease_expires_at = ${c.completed ? null : sql`${c.now}::timestamptz + ${ms(c.leaseMs)}`},
           updated_at = ${c.now}
     where id = ${c.id} and attempt_count = ${c.attempt} and status = 'InProgress'
    returning ${COLUMNS}`);
  return rows[0] ? toTask(rows[0]) : null;
}

/**
 * Splits a large role so several instances share it (seed 003 SLO: ≤ 50k users within 5 min):
 * sub-task i covers the users after boundaries[i-1] up to boundaries[i] (the last one to the end),
 * each a queue row of its own — leased, checkpointed, retried and poisoned on its own — with the
 * parent's RoleVersion and CreatedAt (so it keeps the parent's place in the queue and its lag is
 * measured from the role change) and its traceparent (a failed sub-task links to the role change's
 * trace, not the worker's). Written in the parent's first page transaction, whose checkpoint
 * narrows the parent to the first range; a rollback leaves no sub-task behind.
 */
export async function insertSubTasks(
  tx: Db,
  parent: FanOutTask,
  ranges: readonly { id: string; after: string; upTo: string | null }[],
  now: Date,
): Promise<void> {
  if (ranges.length === 0) return;
  await query(tx, sql`
    insert into identity.access_fanout_tasks
      (id, role_id, company_id, role_version, reason, status, cursor, range_end, parent_id, created_at, updated_at, traceparent)
    select r.id, ${parent.roleId}, ${parent.companyId}, ${parent.roleVersion}, ${parent.reason}, 'Pending', r.after, r.up_to, ${parent.id}, ${parent.createdAt}, ${now},
           (select p.traceparent from identity.access_fanout_tasks p where p.id = ${parent.id})
      from unnest(${sql.param(ranges.map((r) => r.id))}::uuid[], ${sql.param(ranges.map((r) => r.after))}::uuid[],
                  ${sql.param(ranges.map((r) => r.upTo))}::uuid[]) as r(id, after, up_to)`);
  await notifyWorkers(tx);
}

export interface FamilyTotals {
  processedCount: number;
  createdAt: Date;
  startedAt: Date | null;
  tasks: number;
}

/**
 * In the transaction of a task's last page: whether the role's whole fan-out (the task, its parent
 * and their sub-tasks) is now Completed, with its totals. The parent's row is locked first, so of
 * two sub-tasks finishing at once exactly one sees the other's commit and reports the role done.
 */
export async function familyCompletion(tx: Db, rootId: string): Promise<FamilyTotals | null> {
  await query(tx, sql`select 1 from identity.access_fanout_tasks where id = ${rootId} for update`);
  const { rows } = await query<{ done: boolean; processed: string; createdAt: Date; startedAt: Date | null; tasks: number }>(tx, sql`
    select bool_and(status = 'Completed') as done, sum(processed_count)::text as processed, min(created_at) as "createdAt",
           min(started_at) as "startedAt", count(*)::int as tasks
      from identity.access_fanout_tasks
     where id = ${rootId} or parent_id = ${rootId}`);
  const r = rows[0];
  if (!r?.done) return null;
  return { processedCount: Number(r.processed), createdAt: r.createdAt, startedAt: r.startedAt, tasks: r.tasks };
}

/**
 * Graceful stop between pages, with nothing in flight: the task goes back to Pending (no lease),
 * keeping Cursor and AttemptCount, so any worker resumes from Cursor at once without the stop
 * counting as an attempt. Fenced like every write: false when this worker no longer held it.
 */
export async function releaseLease(q: Db, id: string, attempt: number, now: Date): Promise<boolean> {
  const { rowCount } = await query(q, sql`
    update identity.access_fanout_tasks set status = 'Pending', lease_expires_at = null, updated_at = ${now}
     where id = ${id} and attempt_count = ${attempt} and status = 'InProgress'`);
  return rowCount > 0;
}

/**
 * A page failed (its transaction rolled back). The error is kept for the runbook and the task stays
 * InProgress with its lease cut to `retryAt` (the short retry backoff), so it is taken again —
 * from its Cursor, as the next attempt — once that passes; unless this was the last allowed
 * attempt: then Failed. A worker that dies instead leaves its full lease.
 */
export async function recordPageFailure(
  q: Db,
  f: { id: string; attempt: number; error: string; now: Date; retryAt: Date; maxAttempts: number },
): Promise<FanOutTaskStatus | null> {
  const { rows } = await query<{ status: FanOutTaskStatus }>(q, sql`
    update identity.access_fanout_tasks
       set last_error = left(${f.error}, 512),
           status = case when attempt_count >= ${f.maxAttempts} then 'Failed' else status end,
           lease_expires_at = case when attempt_count >= ${f.maxAttempts} then null else ${f.retryAt}::timestamptz end,
           updated_at = ${f.now}
     where id = ${f.id} and attempt_count = ${f.attempt} and status = 'InProgress'
    returning status`);
  return rows[0]?.status ?? null;
}

export async function getTask(q: Db, id: string): Promise<FanOutTask | null> {
  const { rows } = await query<TaskRow>(q, sql`select ${COLUMNS} from identity.access_fanout_tasks where id = ${id}`);
  return rows[0] ? toTask(rows[0]) : null;
}

/** Runbook listing: newest first. */
export async function listTasks(q: Db, f: { status?: FanOutTaskStatus; roleId?: string; limit: number }): Promise<FanOutTask[]> {
  const { rows } = await query<TaskRow>(q, sql`
    select ${COLUMNS} from identity.access_fanout_tasks
     where (${f.status ?? null}::text is null or status = ${f.status ?? null})
       and (${f.roleId ?? null}::uuid is null or role_id = ${f.roleId ?? null})
     order by created_at desc, id desc
     limit ${f.limit}`);
  return rows.map(toTask);
}

export interface QueueStats {
  /** Pending plus InProgress with an expired lease: work no worker is doing. */
  backlog: number;
  inProgress: number;
  failed: number;
  oldestBacklogAgeSeconds: number;
}

export async function queueStats(q: Db, now: Date): Promise<QueueStats> {
  const { rows } = await query<{ backlog: number; inProgress: number; failed: number; oldest: Date | null }>(q, sql`
    select count(*) filter (where status = 'Pending' or (status = 'InProgress' and lease_expires_at <= ${now}))::int as backlog,
           count(*) filter (where status = 'InProgress' and lease_expires_at > ${now})::int as "inProgress",
           count(*) filter (where status = 'Failed')::int as failed,
           min(created_at) filter (where status = 'Pending' or (status = 'InProgress' and lease_expires_at <= ${now})) as oldest
      from identity.access_fanout_tasks
     where status in ('Pending', 'InProgress', 'Failed')`);
  const r = rows[0];
  const oldest = r?.oldest ?? null;
  return {
    backlog: r?.backlog ?? 0,
    inProgress: r?.inProgress ?? 0,
    failed: r?.failed ?? 0,
    oldestBacklogAgeSeconds: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : 0,
  };
}
