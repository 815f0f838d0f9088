/**
 * Reconnect and retry delays with full jitter (a random point in [floor, ceiling]), so clients that
 * lost the server together — every client of a deploy — come back spread out instead of at once.
 * The first retry is never immediate, and a server's Retry-After is a floor.
 */

export interface BackoffOptions {
  /** The ceiling of the first retry; it doubles per attempt. Default 1 s. */
  baseMs?: number;
  /** The highest ceiling. Default 30 s. */
  capMs?: number;
  /** No retry comes sooner. Default 250 ms. */
  minMs?: number;
}

/** The delay before retry `attempt` (0 = the first), at least `retryAfterMs` when the server named one. */
export function retryDelayMs(attempt: number, opts: BackoffOptions = {}, retryAfterMs = 0, random: () => number = Math.random): number {
  const base = opts.baseMs ?? 1000;
  const cap = opts.capMs ?? 30_000;
  const min = Math.min(opts.minMs ?? 250, cap);
  const ceiling = Math.max(min, Math.min(cap, base * 2 ** Math.min(attempt, 30)));
  return Math.max(retryAfterMs, Math.round(min + random() * (ceiling - min)));
}

/** A Retry-After header (delay-seconds or an HTTP date) in milliseconds, or 0. */
export function retryAfterMsOf(header: string | null, now = Date.now()): number {
  if (!header) return 0;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? 0 : Math.max(0, at - now);
}
