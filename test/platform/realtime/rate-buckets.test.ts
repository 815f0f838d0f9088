import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createKeyedBuckets } from '../../../src/platform/realtime/rate-buckets.ts';

/** The per-user connect shares are bounded in memory however many users ask (rate-buckets.ts). */

test('keyed buckets forget refilled keys first, then the oldest, so they never hold more than their bound', () => {
  let now = 0;
  const shares = createKeyedBuckets({ perSecond: 1, burst: 2 }, 10, () => now);
  for (let i = 0; i < 10; i++) shares.take(`u${i}`);
  assert.equal(shares.size, 10);
  now = 1000; // every bucket has refilled: all of them can go
  shares.take('fresh');
  assert.equal(shares.size, 1, 'refilled buckets are forgotten when room is needed');
  for (let i = 0; i < 100; i++) shares.take(`v${i}`);
  assert.ok(shares.size <= 10, `held ${shares.size}`);
  assert.equal(shares.take('v99'), undefined, "a key's second token");
  assert.equal(shares.take('v99'), 1, 'its bucket is kept while it drains: the third waits');
});
