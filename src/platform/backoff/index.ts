/**
 * The one retry backoff of the service: attempt n waits min(cap, base × factor^(n−1)), then up to
 * `jitter` of that longer at random (the cap applies before the jitter), so rows or consumers that
 * failed together do not retry in lockstep. Fixed delays are factor 1; no jitter is jitter 0.
 */
export interface Backoff {
  /** Delay before the first retry, in milliseconds. */
  baseMs: number;
  /** Each further retry waits this many times longer (≥ 1). */
  factor: number;
  /** The delay never grows past this before the jitter, in milliseconds. */
  capMs: number;
  /** Fraction (0..1) the delay may be lengthened by at random. */
  jitter: number;
}

/** The delay before retry `attempt` (1 = the first retry). */
export function backoffDelayMs(b: Backoff, attempt: number, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 64);
  const capped = Math.min(b.capMs, b.baseMs * b.factor ** exponent);
  return Math.max(1, Math.round(capped * (1 + b.jitter * random())));
}

/** Delays without jitter for attempts 1..n, for a statement that applies them (and the jitter) in SQL. */
export const backoffScheduleMs = (b: Backoff, n: number): number[] => Array.from({ length: n }, (_, i) => backoffDelayMs(b, i + 1, () => 0));

/** What is wrong with a backoff, each problem naming `name` (the setting's prefix). */
export function backoffProblems(b: Backoff, name = 'backoff'): string[] {
  const problems: string[] = [];
  if (!(b.baseMs > 0)) problems.push(`${name}: base must be > 0`);
  if (!(b.factor >= 1)) problems.push(`${name}: factor must be ≥ 1`);
  if (!(b.capMs >= b.baseMs)) problems.push(`${name}: cap must be ≥ base`);
  if (!(b.jitter >= 0 && b.jitter <= 1)) problems.push(`${name}: jitter must be within 0..1`);
  return problems;
}
