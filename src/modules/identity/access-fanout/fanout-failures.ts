import type { Db } from '../../../platform/db/index.ts';
import { errorText, rootCause } from '../../../platform/errors/index.ts';
import type { BatchRun } from '../../../platform/jobs/index.ts';
import type { AccessFanOutSettings } from '../context.ts';
import type { IdentityMetrics } from '../metrics.ts';
import { recordPageFailure, type FanOutTask } from './fanout-sql.ts';
import { retryAt } from './fanout-rules.ts';

/** What a failed fan-out task writes and logs (access-fanout.job.ts). */
interface FailureDeps {
  db: Db;
  metrics: IdentityMetrics;
  settings: AccessFanOutSettings;
}

/**
 * Seed step 8: the page rolled back; the task is retried from Cursor after the short retry
 * backoff (the next claim counts the attempt), or is Failed at MaxAttempts. If even this write
 * fails, the lease still expires and the task is retried then.
 */
export async function pageFailed(deps: FailureDeps, task: FanOutTask, err: unknown, run: BatchRun): Promise<void> {
  const { db, metrics, settings } = deps;
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
  if (status === 'Failed') poisoned(deps, task, run, exception);
  else {
    run.log.error(
      { taskId: task.id, roleId: task.roleId, attempt: task.attemptCount, exception, retryAt: status ? retry.toISOString() : undefined, err: rootCause(err) },
      status ? 'task failed; retried from Cursor after the retry backoff' : 'task failed; retried from Cursor when its lease expires',
    );
  }
}

/** The task used up MaxAttempts: the seed's "task failed" line at error, and the poisoned count. */
export function poisoned(deps: Pick<FailureDeps, 'metrics' | 'settings'>, task: FanOutTask, run: BatchRun, exception: string | null): void {
  const { metrics, settings } = deps;
  run.count('poisoned');
  metrics.tasksPoisoned.inc();
  run.log.error(
    { taskId: task.id, roleId: task.roleId, attempt: task.attemptCount, exception, maxAttempts: settings.maxAttempts },
    'task failed: max attempts reached, moved to Failed (replay through the runbook)',
  );
}
