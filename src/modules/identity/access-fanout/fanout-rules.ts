import { backoffDelayMs, backoffProblems, type Backoff } from '../../../platform/backoff/index.ts';
import { settingsProblems } from '../../../platform/types/index.ts';
import type { AccessFanOutSettings } from '../context.ts';
import { identitySettings } from '../settings.ts';

/** Pure rules of the fan-out worker. */

/** A short page is the last one: the role has no users after it (seed: "repeat while the page is full"). */
export function isLastPage(rows: number, batchSize: number): boolean {
  return rows < batchSize;
}

/**
 * The numbers the kernel's batch settings do not see, checked against their settings' own bounds
 * where the worker is built (tests and benchmarks build it without loadConfig): a page size below 1
 * would never reach a short page, so a task would never end; MaxAttempts below 1 would poison every
 * task at its first claim. The retry cap must be at least its base, which no one field can say.
 */
export function validateFanOutSettings(s: Pick<AccessFanOutSettings, 'batchSize' | 'maxAttempts' | 'rangeSize' | 'retryBaseMs' | 'retryCapMs'>): void {
  const problems: string[] = backoffProblems(retryBackoff(s), 'retry backoff (retryBaseMs/retryCapMs)');
  problems.push(
    ...settingsProblems(identitySettings, {
      IDENTITY_ACCESS_FANOUT_BATCH_SIZE: s.batchSize,
      IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS: s.maxAttempts,
    }),
  );
  // FANOUT_RANGE_SIZE below 1 would split a role into sub-tasks of no users.
  if (!Number.isInteger(s.rangeSize) || s.rangeSize < 1) problems.push(`rangeSize (FANOUT_RANGE_SIZE): must be an integer of at least 1 (got ${s.rangeSize})`);
  if (problems.length > 0) throw new Error(`access fan-out worker: ${problems.join('; ')}`);
}

/** The retry backoff of a task whose page failed: the kernel's, doubling from the base up to the cap, +0–20 % jitter. */
export const retryBackoff = (s: Pick<AccessFanOutSettings, 'retryBaseMs' | 'retryCapMs'>): Backoff => ({
  baseMs: s.retryBaseMs,
  factor: 2,
  capMs: s.retryCapMs,
  jitter: 0.2,
});

/**
 * When a task whose page failed on attempt `attempt` is next taken: after the short backoff, not
 * after the lease (a MaxLeaseDuration of 5 min would use up seed 003's 5-min fan-out SLO). The lease is what a
 * crash leaves behind; a failure the worker saw is handed back at once with its retry time.
 */
export function retryAt(now: Date, attempt: number, s: Pick<AccessFanOutSettings, 'retryBaseMs' | 'retryCapMs'>, random?: () => number): Date {
  return new Date(now.getTime() + backoffDelayMs(retryBackoff(s), attempt, random));
}

/** At most this many sub-tasks per role; the last one takes whatever lies past its boundary. */
export const MAX_SUB_TASKS = 1000;

/**
 * Only a queued task, on its first page, before it was ever narrowed, splits: a sub-task never
 * splits again, and a task resumed past its first page (or narrowed already) keeps its range.
 */
export function shouldSplit(task: { parentId: string | null }, at: { cursor: string | null; rangeEnd: string | null }): boolean {
  return task.parentId === null && at.cursor === null && at.rangeEnd === null;
}

/**
 * The sub-tasks' ranges after the splitting task's own, which ends at boundaries[0]: the users
 * after boundaries[i-1] up to boundaries[i], the last one to the end of the role (users granted
 * later land in it, as they would in an unsplit task).
 */
export function subTaskRanges(boundaries: readonly string[]): { after: string; upTo: string | null }[] {
  return boundaries.map((after, i) => ({ after, upTo: boundaries[i + 1] ?? null }));
}
