import type { BackoffPolicy } from './bus.ts';

export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 1000, maxMs: 60_000 };

/**
 * Delay before retry number `attempt` (1 = first retry): initial × 2^(attempt−1), capped at maxMs,
 * minus up to 20 % jitter so consumers that failed together do not retry in lockstep.
 */
export function retryDelayMs(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 30);
  const base = Math.min(policy.maxMs, policy.initialMs * 2 ** exponent);
  return Math.max(1, Math.round(base * (1 - 0.2 * random())));
}
