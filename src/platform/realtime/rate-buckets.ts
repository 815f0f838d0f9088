/**
 * Token buckets for the hub's budgets: the replica's connect rate, each user's share of it
 * (hub-admission.ts) and each connection's invocation budget (invocation-budget.ts). A bucket is
 * plain state, so many of them can live in a map; the rules are plain functions.
 */

/** `burst` tokens at most, refilled at `perSecond`. */
export interface BucketRate {
  perSecond: number;
  burst: number;
}

export interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms, monotonic). */
  at: number;
}

export const fullBucket = (rate: BucketRate, nowMs: number): Bucket => ({ tokens: rate.burst, at: nowMs });

/** Refills the bucket to `nowMs`, then takes a token: undefined when taken, else the whole seconds until one is there (at least 1). */
export function takeToken(bucket: Bucket, rate: BucketRate, nowMs: number): number | undefined {
  bucket.tokens = Math.min(rate.burst, bucket.tokens + ((nowMs - bucket.at) / 1000) * rate.perSecond);
  bucket.at = nowMs;
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return undefined;
  }
  return Math.max(1, Math.ceil((1 - bucket.tokens) / rate.perSecond));
}

/** Whether the bucket would be full by `nowMs`: then it is no different from a fresh one and can be forgotten. */
export const refilledBy = (bucket: Bucket, rate: BucketRate, nowMs: number): boolean =>
  bucket.tokens + ((nowMs - bucket.at) / 1000) * rate.perSecond >= rate.burst;

/**
 * One bucket per key (a user id), bounded in memory: when `maxKeys` are held, the buckets that have
 * refilled are forgotten (losslessly: a full bucket is a fresh one); if every one is still draining,
 * the oldest tenth goes (those keys start again from a full bucket: leniency, never a refusal).
 */
export function createKeyedBuckets(rate: BucketRate, maxKeys: number, nowMs: () => number) {
  const buckets = new Map<string, Bucket>();
  const makeRoom = (now: number) => {
    for (const [key, bucket] of buckets) if (refilledBy(bucket, rate, now)) buckets.delete(key);
    if (buckets.size < maxKeys) return;
    let drop = Math.ceil(maxKeys / 10);
    for (const key of buckets.keys()) {
      if (drop-- <= 0) break;
      buckets.delete(key);
    }
  };
  return {
    /** A token of the key's bucket: undefined when taken, else the seconds until one is there. */
    take(key: string): number | undefined {
      const now = nowMs();
      let bucket = buckets.get(key);
      if (!bucket) {
        if (buckets.size >= maxKeys) makeRoom(now);
        bucket = fullBucket(rate, now);
        buckets.set(key, bucket);
      }
      return takeToken(bucket, rate, now);
    },
    /** Keys held (for tests of the bound). */
    get size(): number {
      return buckets.size;
    },
  };
}
