import { monotonicMs, type HubConnection } from './connection.ts';
import type { HubMetrics } from './metrics.ts';
import { createKeyedBuckets, fullBucket, takeToken, type Bucket, type BucketRate } from './rate-buckets.ts';
import { REALTIME_DEFAULTS } from './defaults.ts';

/**
 * Each connection's budget of hub method calls (HUB_INVOCATIONS_PER_SECOND, a burst of twice that):
 * a token bucket judged before a call runs, so a flood costs its sender's replica a counter per
 * call, not a method's work (one socket's Typing flood stalled every user's REST reads). Past it a
 * call is refused unrun with a completion error; a connection refused `burst` times within
 * REALTIME_DEFAULTS.hubInvocationRefusalWindowMs is closed with a close message naming the reason (no reconnect: a client that
 * floods would flood again).
 *
 * A user's connections also share a budget of twice one connection's (REALTIME_DEFAULTS.hubUserInvocationShare: a phone and
 * a browser both at their full rate), so a user holding HUB_MAX_CONNECTIONS_PER_USER sockets cannot
 * multiply it by that many. A call the user's budget refuses counts toward its connection's close.
 */

/** Stable texts (the official clients reject invoke() with the first and report the second on close). */
export const InvocationErrors = {
  rateLimited: 'HUB_RATE_LIMITED: too many hub method calls on this connection; slow down.',
  closed: 'Connection closed with an error: HUB_RATE_LIMITED, too many hub method calls on this connection.',
} as const;

/** A user's budget, in connections' budgets. */
interface Spent {
  bucket: Bucket;
  refusals: number;
  windowStart: number;
}

/** `admit(conn, invocationId)`: true to run the call; false when it was refused (answered, and the connection closed if it kept going). */
export function createInvocationBudget(rate: BucketRate, metrics: HubMetrics) {
  const spent = new WeakMap<HubConnection, Spent>();
  const users = createKeyedBuckets({ perSecond: rate.perSecond * REALTIME_DEFAULTS.hubUserInvocationShare, burst: rate.burst * REALTIME_DEFAULTS.hubUserInvocationShare }, REALTIME_DEFAULTS.hubUsersKept, monotonicMs);
  return (conn: HubConnection, invocationId: string | undefined): boolean => {
    const now = monotonicMs();
    let s = spent.get(conn);
    if (!s) {
      s = { bucket: fullBucket(rate, now), refusals: 0, windowStart: now };
      spent.set(conn, s);
    }
    const connectionRefused = takeToken(s.bucket, rate, now) !== undefined;
    if (!connectionRefused && users.take(conn.userId) === undefined) return true;
    metrics.invocationsRefused.inc({ reason: connectionRefused ? 'rate' : 'user_rate' });
    if (now - s.windowStart >= REALTIME_DEFAULTS.hubInvocationRefusalWindowMs) {
      s.refusals = 0;
      s.windowStart = now;
    }
    s.refusals += 1;
    // A fire-and-forget call has no answer to carry the refusal; it is dropped, and counts all the same.
    if (invocationId !== undefined) conn.send(conn.format.completionError(invocationId, InvocationErrors.rateLimited), 'completion');
    if (s.refusals >= rate.burst) conn.close('invocation_rate', InvocationErrors.closed, false, 'graceful');
    return false;
  };
}
