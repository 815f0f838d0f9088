import { LeaseLostError, type BatchRun } from '../../../platform/jobs/index.ts';
import type { Logger } from '../../../platform/observability/index.ts';
import { newId } from '../../../platform/time.ts';
import { enqueueAccessEvents } from '../assignments/access-events.ts';
import { loadAccessSnapshots, pageActiveUsersOfRole, rangeBoundaries } from '../assignments/access-sql.ts';
import { accessChangedEvent } from '../assignments/assignments.ts';
import type { Db } from '../../../platform/db/index.ts';
import type { AccessFanOutSettings } from '../context.ts';
import type { IdentityMetrics } from '../metrics.ts';
import { checkpointTask, familyCompletion, insertSubTasks, type FanOutTask } from './fanout-sql.ts';
import { isLastPage, MAX_SUB_TASKS, shouldSplit, subTaskRanges } from './fanout-rules.ts';

export interface PageInfo {
  taskId: string;
  attempt: number;
  cursor: string | null;
  rows: number;
}

export interface AccessFanOutWorkerOptions {
  db: Db;
  metrics: IdentityMetrics;
  settings: AccessFanOutSettings;
  /**
   * Fault-injection points for tests: `pageWritten` runs inside the page's transaction before it
   * commits, `pageCommitted` right after. Never set in production.
   */
  testHooks?: {
    pageWritten?(page: PageInfo): Promise<void>;
    pageCommitted?(page: PageInfo): Promise<void>;
  };
}

/**
 * Seed steps 3–7: one page in one transaction — users > Cursor (up to the task's range end),
 * snapshots, fenced checkpoint, events. A large role's first page also splits the rest of the
 * role into sub-tasks other instances can take (insertSubTasks); the last page of a task tells
 * whether the role's whole fan-out is now done (familyCompletion).
 */
export function writeFanOutPage(
  deps: Pick<AccessFanOutWorkerOptions, 'db' | 'settings' | 'testHooks'>,
  task: FanOutTask,
  at: { cursor: string | null; rangeEnd: string | null },
  run: BatchRun,
) {
  const { db, settings } = deps;
  return db.transaction(async (tx) => {
    const now = run.now();
    const { cursor } = at;
    // The page's users stay share-locked until commit, and the events' ids are taken after the
    // lock: per user, outbox order = commit order against grants/revokes/expiry (defect 5).
    const userIds = await pageActiveUsersOfRole(tx, {
      roleId: task.roleId,
      after: cursor,
      upTo: at.rangeEnd,
      limit: settings.batchSize,
      now,
      lockUsers: true,
    });
    const completed = isLastPage(userIds.length, settings.batchSize);
    let rangeEnd: string | undefined;
    let subTasks = 0;
    if (!completed && shouldSplit(task, at)) {
      const bounds = await rangeBoundaries(tx, { roleId: task.roleId, after: userIds.at(-1)!, size: settings.rangeSize, now, limit: MAX_SUB_TASKS });
      const ranges = subTaskRanges(bounds).map((r) => ({ ...r, id: newId() }));
      rangeEnd = bounds[0];
      subTasks = ranges.length;
      await insertSubTasks(tx, task, ranges, now);
    }
    const snapshots = await loadAccessSnapshots(tx, userIds, now);
    const checkpoint = await checkpointTask(tx, {
      id: task.id,
      attempt: task.attemptCount,
      cursor: userIds.at(-1) ?? cursor,
      processed: snapshots.length,
      completed,
      now,
      leaseMs: settings.maxLeaseMs,
      rangeEnd,
    });
    if (!checkpoint) throw new LeaseLostError(`page of task ${task.id}`, `its lease (attempt ${task.attemptCount})`);
    await enqueueAccessEvents(
      tx,
      snapshots.map((s) =>
        accessChangedEvent(s, { reason: 'RolePermissionsChanged', version: task.roleVersion, occurredAt: now, correlationId: run.jobRunId }),
      ),
    );
    const family = completed ? await familyCompletion(tx, task.parentId ?? task.id) : null;
    await deps.testHooks?.pageWritten?.({ taskId: task.id, attempt: task.attemptCount, cursor: checkpoint.cursor, rows: userIds.length });
    return { checkpoint, rows: snapshots.length, family, subTasks };
  });
}

export type WrittenPage = Awaited<ReturnType<typeof writeFanOutPage>>;

/** A task's last page committed: the seed's "task completed" line, and the role's metrics once its whole fan-out is done. */
export function reportCompleted(deps: Pick<AccessFanOutWorkerOptions, 'metrics'>, task: FanOutTask, page: WrittenPage, run: BatchRun, log: Logger): void {
  const { metrics } = deps;
  const { checkpoint, family } = page;
  const completedAt = checkpoint.completedAt!;
  run.count('completed');
  const durationMs = completedAt.getTime() - (checkpoint.startedAt ?? checkpoint.createdAt).getTime();
  log.info({ processedCount: checkpoint.processedCount, durationMs, roleVersion: task.roleVersion, parentId: task.parentId ?? undefined }, 'task completed');
  if (!family) return;
  // The role's whole fan-out (one task, or a task and its sub-tasks) is done: the seed's per-task metrics.
  const roleDurationMs = completedAt.getTime() - (family.startedAt ?? family.createdAt).getTime();
  metrics.taskDuration.observe(roleDurationMs);
  metrics.taskLag.observe((completedAt.getTime() - family.createdAt.getTime()) / 1000);
  metrics.size.observe({ path: 'queued' }, family.processedCount);
  metrics.tasksCompleted.inc();
  if (family.tasks > 1) {
    log.info({ processedCount: family.processedCount, tasks: family.tasks, durationMs: roleDurationMs, rootTaskId: task.parentId ?? task.id }, 'role fan-out completed');
  }
}
