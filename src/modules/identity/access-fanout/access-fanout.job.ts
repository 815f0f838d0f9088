import { ReportedError, rootCause } from '../../../platform/errors/index.ts';
import {
  batchPhase,
  defineBatchWorker,
  LeaseLostError,
  type BatchCounts,
  type BatchRun,
  type BatchRunContext,
  type BatchWorker,
  type Outcome,
} from '../../../platform/jobs/index.ts';
import { inSpan, spanAttributes } from '../../../platform/observability/index.ts';
import { pageFailed, poisoned } from './fanout-failures.ts';
import { reportCompleted, writeFanOutPage, type AccessFanOutWorkerOptions, type PageInfo, type WrittenPage } from './fanout-page.ts';
import { ACCESS_FANOUT_CHANNEL, claimNextTask, releaseLease, type FanOutTask } from './fanout-sql.ts';

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

export type { AccessFanOutWorkerOptions, PageInfo };

/** What became of a task this run: finished, handed back by a stop, or taken over by another worker. */
type TaskResult = { status: 'completed' } | { status: 'stopped'; cursor: string | null } | { status: 'lease_lost' };

/** The job's own counts beside the kernel's (`claimed` = tasks taken, `failed` = tasks whose pass failed). */
const COUNTS = ['tasks', 'completed', 'users', 'pages', 'subTasks', 'poisoned', 'pageErrors', 'leasesLost'] as const;
/** Every run reports each of COUNTS (zero when nothing happened), so they are typed as present. */
export type FanOutCounts = BatchCounts & Record<(typeof COUNTS)[number], number>;
export type AccessFanOutWorker = Omit<BatchWorker, 'runOnce'> & { runOnce(ctx: BatchRunContext): Promise<FanOutCounts> };

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

  /** The task's pages, one after another, until the last (short) page, a stop, a lost lease or a failure. */
  async function fanOutTask(task: FanOutTask, run: BatchRun): Promise<TaskResult> {
    if (task.status === 'Failed') {
      poisoned(opts, task, run, task.lastError);
      throw new TaskFailedError(`task ${task.id} used up its attempts`);
    }
    const log = run.log.child({ taskId: task.id, roleId: task.roleId });
    let cursor = task.cursor;
    let rangeEnd = task.rangeEnd;
    for (;;) {
      if (run.signal.aborted) return { status: 'stopped', cursor };
      let page: WrittenPage;
      try {
        // Each page is one of the kernel's batches (job_batch_*, phase 'pages'); its span stays the task's child.
        page = await run.batch(
          PAGES_PHASE,
          () =>
            inSpan('page', { taskId: task.id, ...(cursor ? { cursor } : {}) }, async (span) => {
              const written = await writeFanOutPage(opts, task, { cursor, rangeEnd }, run);
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
        await pageFailed(opts, task, err, run);
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
        reportCompleted({ metrics }, task, page, run, log);
        return { status: 'completed' };
      }
    }
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
