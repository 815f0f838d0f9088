import type { AccessFanOutSettings } from '../context.ts';

/** Pure rules of the fan-out worker. */

/** A short page is the last one: the role has no users after it (seed: "repeat while the page is full"). */
export function isLastPage(rows: number, batchSize: number): boolean {
  return rows < batchSize;
}

/** The worker refuses settings it cannot run with (loadConfig already bounds the env values). */
export function validateFanOutSettings(s: AccessFanOutSettings): void {
  const problems: string[] = [];
  if (!Number.isInteger(s.batchSize) || s.batchSize < 1) problems.push('batchSize must be a positive integer');
  if (!Number.isInteger(s.maxAttempts) || s.maxAttempts < 1) problems.push('maxAttempts must be a positive integer');
  if (!(s.maxLeaseMs >= 1000)) problems.push('maxLeaseMs must be at least 1000');
  if (!(s.pollingIntervalMs > 0)) problems.push('pollingIntervalMs must be positive');
  if (problems.length > 0) throw new Error(`access fan-out worker: ${problems.join('; ')}`);
}
