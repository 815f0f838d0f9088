import type { FastifyInstance, FastifyRequest } from 'fastify';
import { counter, type Registry } from '../observability/metrics.ts';
import { AppError } from './errors.ts';

/**
 * A per-user bound on requests in progress (per replica), so one user's parallel reads cannot take
 * the database pool and the cores from everyone else: measured, 50 parallel `GET /api/events?limit=500`
 * of one user took another user's p95 from ~9 to 93–245 ms. A request takes a slot once its token is
 * verified (`requireUser`, auth-plugin.ts); past the limit it is refused at once, before any query,
 * with 429 USER_CONCURRENCY_LIMIT and `Retry-After`. A rate limit per minute (rate-limit.ts) bounds
 * how many, this bounds how many at the same time.
 *
 * The slot is released when the request's work is over: when its reply (answer or error) is handed
 * to Fastify to send (onSend), which happens whichever way the request ends, and at the latest when
 * the response is finished (onResponse). A client that aborts does not get its slot back at the
 * abort: Fastify runs the handler to its end anyway (its queries included), and a slot freed at the
 * abort would let a client that aborts each request at once run any number of them; the slot is
 * freed at the handler's end, by the same onSend.
 */

/** The code of the 429; listed on every route that takes a slot (openapi-components.ts). */
export const USER_CONCURRENCY_LIMIT = 'USER_CONCURRENCY_LIMIT';

/** Retry-After of the refusal: a slot frees as soon as one of the user's requests ends. */
const RETRY_AFTER_SECONDS = 1;

export interface UserSlots {
  /** Takes a slot for the request's user, or throws the 429. No-op when the limit is off (0). */
  take(req: FastifyRequest, userId: string): void;
  /** Requests in progress per user right now (for tests and diagnostics). */
  inFlight(userId: string): number;
}

/** The bound, with its release hooks on `app` (register before any route, so they apply to all). */
export function registerUserSlots(app: FastifyInstance, opts: { maxPerUser: number; registry: Registry }): UserSlots {
  const byUser = new Map<string, number>();
  const held = new WeakMap<FastifyRequest, string>();
  const refused = counter(opts.registry, {
    name: 'http_user_concurrency_refused_total',
    help: 'Requests refused with 429 USER_CONCURRENCY_LIMIT: their user already had HTTP_MAX_CONCURRENT_REQUESTS_PER_USER requests in progress on this replica',
  });
  const release = async (req: FastifyRequest) => {
    const userId = held.get(req);
    if (userId === undefined) return;
    held.delete(req);
    const left = (byUser.get(userId) ?? 0) - 1;
    if (left > 0) byUser.set(userId, left);
    else byUser.delete(userId);
  };
  app.addHook('onSend', release);
  app.addHook('onResponse', release);
  return {
    take(req, userId) {
      if (opts.maxPerUser === 0 || held.has(req)) return;
      const now = byUser.get(userId) ?? 0;
      if (now >= opts.maxPerUser) {
        refused.inc();
        const message = `you have ${now} requests in progress; send another when one has answered`;
        throw new AppError(USER_CONCURRENCY_LIMIT, message, 429, { retryAfterSeconds: RETRY_AFTER_SECONDS });
      }
      byUser.set(userId, now + 1);
      held.set(req, userId);
    },
    inFlight: (userId) => byUser.get(userId) ?? 0,
  };
}
