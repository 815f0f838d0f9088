import type { Db } from '../../../platform/db/index.ts';
import { errorText, ReportedError, rootCause } from '../../../platform/errors/index.ts';
import { batchPhase, defineBatchWorker, type BatchCounts, type BatchRun, type BatchRunContext, type BatchWorker, type Outcome } from '../../../platform/jobs/index.ts';
import { enqueueAccessEvents } from '../assignments/access-events.ts';
import { loadAccessSnapshots, pageActiveUsersOfRole, rangeBoundaries } from '../assignments/access-sql.ts';
import { newId } from '../../../platform/time.ts';
import { inSpan, spanAttributes } from '../../../platform/observability/index.ts';
import { accessChangedEvent } from '../assignments/assignments.ts';
import type { AccessFanOutSettings } from '../context.ts';
import type { IdentityMetrics } from '../metrics.ts';
import { ACCESS_FANOUT_CHANNEL, checkpointTask, claimNextTask, familyCompletion, insertSubTasks, recordPageFailure, releaseLease, type FanOutTask } from './fanout-sql.ts';
import { isLastPage, MAX_SUB_TASKS, retryAt, shouldSplit, subTaskRanges } from './fanout-rules.ts';

/**
 * AccessFanOutJob (seed 003) on the kernel's batch worker, one task per claim, its pages the
 * kernel's batches (job_batch_*{phase="pages"}):
 *
 *   claim   — take the oldest queued task no other instance holds, under a lease (seed step 2);
 *   process — its pages of users, each page's events and the task's checkpoint in one
 *             transaction fenced by the attempt this worker claimed (steps 3–7); the stop signal
 *             is checked between pages;
 *   record  — a task the stop interrupted (or never started) goes back to Pending without using
 *             up an attempt; every other outcome was already written by its pages.
 *
 * A crash repeats at most the uncommitted page, which rolled back anyway. A failed page hands the
 * task back after a short backoff (the lease is for crashes). A role with more than RangeSize users
 * is split on its first page into UserId-range sub-tasks — queue rows of their own — so several
 * instances share it; each sub-task is leased, checkpointed and retried on its own.
 */

export const ACCESS_FANOUT_JOB = 'identity-access-fanout';
/** The job_batch_* phase label of the fan-out's batches: pages of users, not the tasks they belong to. */
export const PAGES_PHASE = 'pages';

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

/** What became of a task this run: finished, handed back by a stop, or taken over by another worker. */
type TaskResult = { status: 'completed' } | { status: 'stopped'; cursor: string | null } | { status: 'lease_lost' };

/** The job's own counts beside the kernel's (`claimed` = tasks taken, `failed` = tasks whose pass failed). */
const COUNTS = ['tasks', 'completed', 'users', 'pages', 'subTasks', 'poisoned', 'pageErrors', 'leasesLost'] as const;
/** Every run reports each of COUNTS (zero when nothing happened), so they are typed as present. */
export type FanOutCounts = BatchCounts & Record<(typeof COUNTS)[number], number>;
export type AccessFanOutWorker = Omit<BatchWorker, 'runOnce'> & { runOnce(ctx: BatchRunContext): Promise<FanOutCounts> };

class LeaseLostError extends Error {
  constructor() {
    super('the task lease was taken over by another worker');
  }
}

/** A task's pass failed: a page rolled back, or the claim found it had used up MaxAttempts. */
/** Logged by the job as the seed's "task failed" line, so the kernel adds no line of its own. */
class TaskFailedError extends ReportedError {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'TaskFailedError';
  }
}

/** The worker as a job: every instance polls (tasks are leased, not the job), NOTIFY wakes it on a new task. */
export function accessFanOutJob(opts: AccessFanOutWorkerOptions): AccessFanOutWorker {
  const { db, metrics, settings } = opts;

  /**
   * Seed steps 3–7: one page in one transaction — users > Cursor (up to the task's range end),
   * snapshots, fenced checkpoint, events. A large role's first page also splits the rest of the
   * role into sub-tasks other instances can take (insertSubTasks); the last page of a task tells
   * whether the role's whole fan-out is now done (familyCompletion).
   */
  function writePage(task: FanOutTask, at: { cursor: string | null; rangeEnd: string | null }, run: BatchRun) {
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
      if (!checkpoint) throw new LeaseLostError();
      await enqueueAccessEvents(
        tx,
        snapshots.map((s) =>
          accessChangedEvent(s, { reason: 'RolePermissionsChanged', version: task.roleVersion, occurredAt: now, correlationId: run.jobRunId }),
        ),
      );
      const family = completed ? await familyCompletion(tx, task.parentId ?? task.id) : null;
      await opts.testHooks?.pageWritten?.({ taskId: task.id, attempt: task.attemptCount, cursor: checkpoint.cursor, rows: userIds.length });
      return { checkpoint, rows: snapshots.length, family, subTasks };
    });
  }

  /** The task's pages, one after another, until the last (short) page, a stop, a lost lease or a failure. */
  async function fanOutTask(task: FanOutTask, run: BatchRun): Promise<TaskResult> {
    if (task.status === 'Failed') {
      poisoned(task, run, task.lastError);
      throw new TaskFailedError(`task ${task.id} used up its attempts`);
    }
    const log = run.log.child({ taskId: task.id, roleId: task.roleId });
    let cursor = task.cursor;
    let rangeEnd = task.rangeEnd;
    for (;;) {
      if (run.signal.aborted) return { status: 'stopped', cursor };
      let page: Awaited<ReturnType<typeof writePage>>;
      try {
        // Each page is one of the kernel's batches (job_batch_*, phase 'pages'); its span stays the task's child.
        page = await run.batch(
          PAGES_PHASE,
          () =>
            inSpan('page', { taskId: task.id, ...(cursor ? { cursor } : {}) }, async (span) => {
              const written = await writePage(task, { cursor, rangeEnd }, run);
              span.setAttributes({ rows: written.rows, processedCount: written.checkpoint.processedCount });
              return written;
            }),
          (written) => ({ claimed: written.rows, failed: 0, released: 0 }),
        );
      } catch (err) {
        if (err instanceof LeaseLostError) {
          run.count('leasesLost');
          metrics.errors.inc({ kind: 'lease_lost' });
          log.warn({ attempt: task.attemptCount, cursor }, 'task lease lost to another worker; page rolled back');
          return { status: 'lease_lost' };
        }
        await pageFailed(task, err, run);
        throw new TaskFailedError(`a page of task ${task.id} failed`, rootCause(err));
      }
      const { checkpoint, rows, family, subTasks } = page;
      spanAttributes({ processedCount: checkpoint.processedCount });
      cursor = checkpoint.cursor;
      rangeEnd = checkpoint.rangeEnd;
      run.count('users', rows);
      metrics.users.inc(rows);
      metrics.accessEvents.inc({ reason: 'RolePermissionsChanged' }, rows);
      if (subTasks > 0) {
        run.count('subTasks', subTasks);
        log.info({ subTasks, rangeSize: settings.rangeSize, rangeEnd }, 'large role split into sub-tasks for other instances');
      }
      if (rows > 0) {
        run.count('pages');
        metrics.batches.inc();
        log.info({ rows, cursor, processedCount: checkpoint.processedCount }, 'batch processed');
      }
      await opts.testHooks?.pageCommitted?.({ taskId: task.id, attempt: task.attemptCount, cursor, rows });
      if (checkpoint.status === 'Completed') {
        const completedAt = checkpoint.completedAt!;
        run.count('completed');
        const durationMs = completedAt.getTime() - (checkpoint.startedAt ?? checkpoint.createdAt).getTime();
        log.info(
          { processedCount: checkpoint.processedCount, durationMs, roleVersion: task.roleVersion, parentId: task.parentId ?? undefined },
          'task completed',
        );
        if (family) {
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
        return { status: 'completed' };
      }
    }
  }

  /**
   * Seed step 8: the page rolled back; the task is retried from Cursor after the short retry
   * backoff (the next claim counts the attempt), or is Failed at MaxAttempts. If even this write
   * fails, the lease still expires and the task is retried then.
   */
  async function pageFailed(task: FanOutTask, err: unknown, run: BatchRun): Promise<void> {
    run.count('pageErrors');
    metrics.errors.inc({ kind: 'page_failed' });
    const exception = errorText(err);
    const now = run.now();
    const retry = retryAt(now, task.attemptCount, settings);
    const status = await recordPageFailure(db, {
      id: task.id,
      attempt: task.attemptCount,
      error: exception,
      now,
      retryAt: retry,
      maxAttempts: settings.maxAttempts,
    }).catch(() => null);
    if (status === 'Failed') poisoned(task, run, exception);
    else {
      run.log.error(
        { taskId: task.id, roleId: task.roleId, attempt: task.attemptCount, exception, retryAt: status ? retry.toISOString() : undefined, err: rootCause(err) },
        status ? 'task failed; retried from Cursor after the retry backoff' : 'task failed; retried from Cursor when its lease expires',
      );
    }
  }

  function poisoned(task: FanOutTask, run: BatchRun, exception: string | null): void {
    run.count('poisoned');
    metrics.tasksPoisoned.inc();
    run.log.error(
      { taskId: task.id, roleId: task.roleId, attempt: task.attemptCount, exception, maxAttempts: settings.maxAttempts },
      'task failed: max attempts reached, moved to Failed (replay through the runbook)',
    );
  }

  /**
   * A graceful stop with nothing in flight: committed pages stay; the task goes back to Pending
   * without using up an attempt (a deploy is not a failure), and any instance resumes from Cursor
   * at once. If the release fails, the lease expires and that counts as an attempt.
   */
  async function releaseStopped(outcomes: readonly Outcome<FanOutTask, TaskResult>[], run: BatchRun): Promise<void> {
    for (const o of outcomes) {
      const cursor = o.status === 'released' ? o.row.cursor : o.status === 'done' && o.result.status === 'stopped' ? o.result.cursor : undefined;
      if (cursor === undefined) continue;
      const released = await releaseLease(db, o.row.id, o.row.attemptCount, run.now());
      run.log.info({ taskId: o.row.id, roleId: o.row.roleId, cursor, attempt: o.row.attemptCount, released }, 'task paused by stop; lease released');
    }
  }

  const worker = defineBatchWorker({
    name: ACCESS_FANOUT_JOB,
    every: settings.pollingIntervalMs,
    wakeChannel: ACCESS_FANOUT_CHANNEL,
    // A task is what a worker leases, so a claim takes one; its pages are the batches of users.
    // A run takes no new task once a lease's length has passed; the next poll goes on.
    settings: { batchSize: 1, maxRunMs: settings.maxLeaseMs },
    counts: COUNTS,
    phases() {
      return [
        batchPhase<FanOutTask, TaskResult>({
          name: 'tasks',
          // The batches are the task's pages (run.batch in fanOutTask), not the one-task claim.
          ownBatches: true,
          async claim(_limit, run, exclude) {
            const task = await claimNextTask(db, { now: run.now(), leaseMs: settings.maxLeaseMs, maxAttempts: settings.maxAttempts, exclude }).catch((err: unknown) => {
              // The queue cannot be read (database down): the run fails, and the seed's
              // "errors_total growing" alert must see it as well as a failed page.
              metrics.errors.inc({ kind: 'claim_failed' });
              throw err;
            });
            // The kernel logs the seed's 'job started' (with jobRunId) once the run has a task.
            if (!task) return [];
            if (task.status !== 'Failed') {
              run.count('tasks');
              run.log.info({ taskId: task.id, roleId: task.roleId, attempt: task.attemptCount, cursor: task.cursor }, 'task dequeued');
            }
            return [task];
          },
          // Seed 003 "Traces": a span per task, a child per page (writePage).
          traceRow: { name: 'task', attributes: (t) => ({ taskId: t.id, roleId: t.roleId, attempt: t.attemptCount, batchSize: settings.batchSize }) },
          process: fanOutTask,
          record: releaseStopped,
        }),
      ];
    },
  });
  // The kernel starts every count of COUNTS at zero, so a run's counts have them all.
  return worker as AccessFanOutWorker;
}
