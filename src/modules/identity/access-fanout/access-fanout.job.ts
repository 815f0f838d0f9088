import type { Db } from '../../../platform/db/index.ts';
import type { JobContext, JobDefinition } from '../../../platform/jobs/index.ts';
import { enqueue } from '../../../platform/outbox/index.ts';
import { loadAccessSnapshots, pageActiveUsersOfRole } from '../assignments/access-sql.ts';
import { accessChangedEvent } from '../assignments/assignments.ts';
import type { AccessFanOutSettings } from '../context.ts';
import { ACCESS_FANOUT_CHANNEL, checkpointTask, claimNextTask, recordPageFailure, releaseLease, type FanOutTask } from './fanout-sql.ts';
import { isLastPage, validateFanOutSettings } from './fanout-rules.ts';
import type { IdentityMetrics } from '../metrics.ts';

/**
 * AccessFanOutJob (seed 003): takes one queued task at a time (skipping tasks other instances hold)
 * and announces UserAccessChanged to every unique active user of the role, page by page. Each page
 * — its events and the task's checkpoint — commits as one transaction, fenced by the attempt this
 * worker claimed; a crash repeats at most the uncommitted page, which rolled back anyway.
 */

export const ACCESS_FANOUT_JOB = 'identity-access-fanout';

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

export interface FanOutCounts {
  [name: string]: number;
  tasks: number;
  completed: number;
  users: number;
  batches: number;
  failed: number;
  pageErrors: number;
  leasesLost: number;
}

type TaskOutcome = 'completed' | 'stopped' | 'page_failed' | 'lease_lost';

class LeaseLostError extends Error {
  constructor() {
    super('the task lease was taken over by another worker');
  }
}

type RunContext = Pick<JobContext, 'jobRunId' | 'signal' | 'log' | 'now'>;

/** The innermost cause: drizzle wraps driver errors in one whose message is the whole query text. */
function rootCause(err: unknown): unknown {
  let e = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e;
}

const errorText = (err: unknown) => {
  const root = rootCause(err);
  return root instanceof Error ? `${root.name}: ${root.message}` : String(root);
};

export function createAccessFanOutWorker(opts: AccessFanOutWorkerOptions) {
  validateFanOutSettings(opts.settings);
  const { db, metrics, settings } = opts;

  /** One page in one transaction: read users > Cursor, snapshots, fenced checkpoint, events. */
  async function processPage(task: FanOutTask, cursor: string | null, ctx: RunContext) {
    return db.transaction(async (tx) => {
      const now = ctx.now();
      const userIds = await pageActiveUsersOfRole(tx, { roleId: task.roleId, after: cursor, limit: settings.batchSize, now });
      const completed = isLastPage(userIds.length, settings.batchSize);
      const snapshots = await loadAccessSnapshots(tx, userIds, now);
      const checkpoint = await checkpointTask(tx, {
        id: task.id,
        attempt: task.attemptCount,
        cursor: userIds.at(-1) ?? cursor,
        processed: snapshots.length,
        completed,
        now,
        leaseMs: settings.maxLeaseMs,
      });
      if (!checkpoint) throw new LeaseLostError();
      await enqueue(
        tx,
        snapshots.map((s) =>
          accessChangedEvent(s, { reason: 'RolePermissionsChanged', version: task.roleVersion, occurredAt: now, correlationId: ctx.jobRunId }),
        ),
      );
      await opts.testHooks?.pageWritten?.({ taskId: task.id, attempt: task.attemptCount, cursor: checkpoint.cursor, rows: userIds.length });
      return { checkpoint, rows: snapshots.length };
    });
  }

  async function processTask(task: FanOutTask, ctx: RunContext, counts: FanOutCounts): Promise<TaskOutcome> {
    const log = ctx.log.child({ taskId: task.id, roleId: task.roleId });
    let cursor = task.cursor;
    for (;;) {
      if (ctx.signal.aborted) {
        // Graceful stop between pages, nothing in flight: committed pages stay; the task goes back
        // to Pending without using up an attempt (a deploy is not a failure), and any instance
        // resumes from Cursor now. If the release fails, the lease expires and that counts.
        const released = await releaseLease(db, task.id, task.attemptCount, ctx.now()).catch(() => false);
        log.info({ cursor, attempt: task.attemptCount, released }, 'task paused by stop; lease released');
        return 'stopped';
      }
      let page: Awaited<ReturnType<typeof processPage>>;
      try {
        page = await processPage(task, cursor, ctx);
      } catch (err) {
        if (err instanceof LeaseLostError) {
          counts.leasesLost += 1;
          metrics.errors.inc({ kind: 'lease_lost' });
          log.warn({ attempt: task.attemptCount, cursor }, 'task lease lost to another worker; page rolled back');
          return 'lease_lost';
        }
        counts.pageErrors += 1;
        metrics.errors.inc({ kind: 'page_failed' });
        const status = await recordPageFailure(db, {
          id: task.id,
          attempt: task.attemptCount,
          error: errorText(err),
          now: ctx.now(),
          maxAttempts: settings.maxAttempts,
        }).catch(() => null);
        if (status === 'Failed') poisoned(task, ctx, counts, errorText(err));
        else {
          log.error({ attempt: task.attemptCount, exception: errorText(err), err: rootCause(err) }, 'task failed; retried from Cursor when its lease expires');
        }
        return 'page_failed';
      }
      const { checkpoint, rows } = page;
      cursor = checkpoint.cursor;
      counts.users += rows;
      metrics.users.inc(rows);
      metrics.accessEvents.inc({ reason: 'RolePermissionsChanged' }, rows);
      if (rows > 0) {
        counts.batches += 1;
        metrics.batches.inc();
        log.info({ rows, cursor, processedCount: checkpoint.processedCount }, 'batch processed');
      }
      await opts.testHooks?.pageCommitted?.({ taskId: task.id, attempt: task.attemptCount, cursor, rows });
      if (checkpoint.status === 'Completed') {
        const completedAt = checkpoint.completedAt!;
        const durationMs = completedAt.getTime() - (checkpoint.startedAt ?? checkpoint.createdAt).getTime();
        metrics.taskDuration.observe(durationMs);
        metrics.taskLag.observe((completedAt.getTime() - checkpoint.createdAt.getTime()) / 1000);
        metrics.size.observe({ path: 'queued' }, checkpoint.processedCount);
        metrics.tasksCompleted.inc();
        counts.completed += 1;
        log.info({ processedCount: checkpoint.processedCount, durationMs, roleVersion: task.roleVersion }, 'task completed');
        return 'completed';
      }
    }
  }

  function poisoned(task: FanOutTask, ctx: RunContext, counts: FanOutCounts, exception: string | null): void {
    counts.failed += 1;
    metrics.tasksPoisoned.inc();
    ctx.log.error(
      { taskId: task.id, roleId: task.roleId, attempt: task.attemptCount, exception, maxAttempts: settings.maxAttempts },
      'task failed: max attempts reached, moved to Failed (replay through the runbook)',
    );
  }

  /** One run: tasks one after another until the queue has nothing to take or the run is stopped. */
  async function runOnce(ctx: RunContext): Promise<FanOutCounts> {
    const counts: FanOutCounts = { tasks: 0, completed: 0, users: 0, batches: 0, failed: 0, pageErrors: 0, leasesLost: 0 };
    let announced = false;
    while (!ctx.signal.aborted) {
      const task = await claimNextTask(db, ctx.now(), settings.maxLeaseMs, settings.maxAttempts);
      if (!task) break;
      if (!announced) {
        ctx.log.info({ jobRunId: ctx.jobRunId }, 'job started');
        announced = true;
      }
      if (task.status === 'Failed') {
        poisoned(task, ctx, counts, task.lastError);
        continue;
      }
      counts.tasks += 1;
      ctx.log.info({ taskId: task.id, roleId: task.roleId, attempt: task.attemptCount, cursor: task.cursor }, 'task dequeued');
      await processTask(task, ctx, counts);
    }
    if (!announced) ctx.log.debug('no access fan-out task to take');
    return counts;
  }

  return { runOnce };
}

/** The worker as a job: every instance polls (tasks are leased, not the job), NOTIFY wakes it on a new task. */
export function accessFanOutJob(opts: AccessFanOutWorkerOptions): JobDefinition {
  const worker = createAccessFanOutWorker(opts);
  return {
    name: ACCESS_FANOUT_JOB,
    every: opts.settings.pollingIntervalMs,
    wakeChannel: ACCESS_FANOUT_CHANNEL,
    run: (ctx) => worker.runOnce(ctx),
  };
}
