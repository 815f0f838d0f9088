import type { FastifyInstance, FastifyRequest } from 'fastify';
import { counter, type Registry } from '../observability/metrics.ts';
import { AppError } from './errors.ts';
import { HTTP_DEFAULTS } from './defaults.ts';
import { SECOND_MS } from '../time.ts';

/**
 * A per-user bound on requests in progress (per replica), so one user's parallel reads cannot take
 * the database pool and the cores from everyone else: measured, 50 parallel `GET /api/events?limit=500`
 * of one user took another user's p95 from ~9 to 93–245 ms. A request takes a slot once its token is
 * verified (`requireUser`, auth-plugin.ts); past the limit it is refused at once, before any query,
 * with 429 USER_CONCURRENCY_LIMIT and `Retry-After`. A route may bound its own share lower
 * (`config: { userConcurrency: n }`): the event stream takes one page at a time per user, since one
 * page of 500 events is rebuilt in this process and a client reads pages one after another. A rate limit per minute (rate-limit.ts) bounds
 * how many, this bounds how many at the same time.
 *
 * The slot is released when the request's work is over: when its reply (answer or error) is handed
 * to Fastify to send (onSend), which happens whichever way the request ends, and at the latest when
 * the response is finished (onResponse). A client that aborts does not get its slot back at the
 * abort: Fastify runs the handler to its end anyway (its queries included), and a slot freed at the
 * abort would let a client that aborts each request at once run any number of them; the slot is
 * freed at the handler's end, by the same onSend.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * At most this many requests of one user to this route in progress at once (within the user's
     * bound): for a route whose one request is heavy and which a client has no reason to call in
     * parallel, such as the event stream, read page after page.
     */
    userConcurrency?: number;
  }
}

/** The code of the 429; listed on every route that takes a slot (openapi-components.ts). */
export const USER_CONCURRENCY_LIMIT = 'USER_CONCURRENCY_LIMIT';

/**
 * A refusal is answered only after this hold. A client that ignores Retry-After and resends at once
 * turns its refusals into a flood of its own (measured: 50 parallel `GET /api/events` loops got
 * 9,500–27,000 429s in 11 s, and their token checks and answers took the cores from other users, whose
 * p95 stayed at 251 ms); held, each of its connections costs one answer a hold. A client that honours
 * Retry-After waits that long anyway. Past HTTP_DEFAULTS.userConcurrencyHeldMax refusals on hold at once (a flood of connections),
 * the rest are answered at once: a timer each is cheap, but not unbounded.
 */
export const REFUSAL_HOLD_MS = HTTP_DEFAULTS.userConcurrencyRetryAfterSeconds * SECOND_MS;

export interface UserSlots {
  /**
   * Takes a slot for the request's user, or rejects with the 429 after REFUSAL_HOLD_MS. No-op when
   * the limit is off (0).
   */
  take(req: FastifyRequest, userId: string): Promise<void>;
}

/** The bound, with its release hooks on `app` (register before any route, so they apply to all). */
export function registerUserSlots(app: FastifyInstance, opts: { maxPerUser: number; registry: Registry }): UserSlots {
  const byUser = new Map<string, number>();
  let onHold = 0;
  // The counters a request holds: its user's, and its user's on its route when the route has a bound of its own.
  const held = new WeakMap<FastifyRequest, string[]>();
  const refused = counter(opts.registry, {
    name: 'http_user_concurrency_refused_total',
    help: 'Requests refused with 429 USER_CONCURRENCY_LIMIT: their user already had HTTP_MAX_CONCURRENT_REQUESTS_PER_USER requests in progress on this replica',
  });
  const release = async (req: FastifyRequest) => {
    const keys = held.get(req);
    if (keys === undefined) return;
    held.delete(req);
    for (const key of keys) {
      const left = (byUser.get(key) ?? 0) - 1;
      if (left > 0) byUser.set(key, left);
      else byUser.delete(key);
    }
  };
  app.addHook('onSend', release);
  app.addHook('onResponse', release);
  return {
    async take(req, userId) {
      if (opts.maxPerUser === 0 || held.has(req)) return;
      const keys = [userId];
      const routeLimit = req.routeOptions.config.userConcurrency;
      if (routeLimit !== undefined) keys.push(`${userId} ${req.routeOptions.method} ${req.routeOptions.url}`);
      for (const [i, key] of keys.entries()) {
        const now = byUser.get(key) ?? 0;
        if (now < (i === 0 ? opts.maxPerUser : routeLimit!)) continue;
        refused.inc();
        const message = i === 0 ? `you have ${now} requests in progress; send another when one has answered` : `you have ${now} requests to this route in progress; send another when it has answered`;
        const refusal = new AppError(USER_CONCURRENCY_LIMIT, message, 429, { retryAfterSeconds: HTTP_DEFAULTS.userConcurrencyRetryAfterSeconds });
        if (onHold < HTTP_DEFAULTS.userConcurrencyHeldMax) {
          onHold += 1;
          await new Promise((resolve) => setTimeout(resolve, REFUSAL_HOLD_MS)).finally(() => (onHold -= 1));
        }
        throw refusal;
      }
      for (const key of keys) byUser.set(key, (byUser.get(key) ?? 0) + 1);
      held.set(req, keys);
    },
  };
}
