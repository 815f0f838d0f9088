import { backoffDelayMs, type Backoff } from '../../../platform/backoff/index.ts';
import type { AccessFanOutSettings } from '../context.ts';
import { IDENTITY_DEFAULTS } from '../defaults.ts';

/** Pure rules of the fan-out worker. */

/** A short page is the last one: the role has no users after it (seed: "repeat while the page is full"). */
export function isLastPage(rows: number, batchSize: number): boolean {
  return rows < batchSize;
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

/** At most this many sub-tasks per role (IDENTITY_DEFAULTS.fanOutMaxSubTasks); the last one takes whatever lies past its boundary. */
export const MAX_SUB_TASKS = IDENTITY_DEFAULTS.fanOutMaxSubTasks;

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
