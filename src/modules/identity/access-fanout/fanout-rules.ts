import type { AccessFanOutSettings } from '../context.ts';

/** Pure rules of the fan-out worker. */

/** A short page is the last one: the role has no users after it (seed: "repeat while the page is full"). */
export function isLastPage(rows: number, batchSize: number): boolean {
  return rows < batchSize;
}

/**
 * The two numbers the kernel's batch settings do not see, checked where the worker is built (tests
 * and benchmarks build it without loadConfig): a page size below 1 would never reach a short page,
 * so a task would never end; MaxAttempts below 1 would poison every task at its first claim.
 */
export function validateFanOutSettings(s: Pick<AccessFanOutSettings, 'batchSize' | 'maxAttempts'>): void {
  const problems: string[] = [];
  if (!Number.isInteger(s.batchSize) || s.batchSize < 1) problems.push('batchSize (IDENTITY_ACCESS_FANOUT_BATCH_SIZE) must be a positive integer');
  if (!Number.isInteger(s.maxAttempts) || s.maxAttempts < 1) problems.push('maxAttempts (IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS) must be a positive integer');
  if (problems.length > 0) throw new Error(`access fan-out worker: ${problems.join('; ')}`);
}
