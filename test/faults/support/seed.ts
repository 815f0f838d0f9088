import { randomInt } from 'node:crypto';

/**
 * The fault suite's randomness: one seeded PRNG per scenario, the seed taken from FAULT_SEED (to
 * replay a failure) or drawn at random, and printed on every summary line.
 */

export interface Rng {
  readonly seed: number;
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number;
  /** True with probability p. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
}

/** mulberry32: tiny, fast, and the same sequence for the same seed on every machine. */
export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    seed,
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
}

/** FAULT_SEED when set (a replay), else a fresh random seed. */
export function faultSeed(): number {
  const fixed = process.env.FAULT_SEED;
  if (fixed !== undefined && fixed !== '') {
    const n = Number(fixed);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new Error(`FAULT_SEED must be an integer in 0..4294967295, got ${fixed}`);
    return n;
  }
  return randomInt(0, 0xffffffff);
}

export interface Summary {
  fault: string;
  seed: number;
  kills: number;
  expected: number;
  seen: number;
  duplicated: number;
}

/** The scenario's one line on stdout, printed before its assertions so a failure still shows it. */
export function printSummary(s: Summary): void {
  process.stdout.write(
    `fault=${s.fault} seed=${s.seed} kills=${s.kills} expected=${s.expected} seen=${s.seen} duplicated=${s.duplicated}\n`,
  );
}

/** Logs how long each phase of a scenario took (stderr), to size scenarios for a 2-core machine. */
export function phaseClock(): (name: string) => void {
  let last = Date.now();
  return (name) => {
    const now = Date.now();
    process.stderr.write(`[faults] ${name}: ${((now - last) / 1000).toFixed(1)} s\n`);
    last = now;
  };
}
