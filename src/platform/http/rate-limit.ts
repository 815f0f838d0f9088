import type { FastifyInstance, FastifyRequest } from 'fastify';
import rateLimit, { type RateLimitOptions } from '@fastify/rate-limit';
import type { Redis } from 'ioredis';
import type { Logger } from '../observability/logger.ts';
import { closeRedisClient, createRedisClient, waitUntilReady } from '../redis/index.ts';
import { AppError } from './errors.ts';
import { HTTP_DEFAULTS } from './defaults.ts';

/**
 * Per-route request limits (@fastify/rate-limit): a route opts in with `config: perUserLimit(n)` or
 * `config: perClientLimit(n)`; nothing else is limited. Counters live in Redis when REDIS_URL is set,
 * so a limit holds across replicas, in this process otherwise. Over the limit: 429
 * `{ code: 'RATE_LIMITED', message }` with `Retry-After` (seconds until the window resets).
 *
 * Redis being down must not take the routes down with it: the client fails a command at once
 * (no offline queue, 500 ms timeout) and the request is let through (skipOnError) — limits are
 * abuse protection, not accounting.
 */

export async function registerRateLimits(app: FastifyInstance, opts: { redisUrl?: string; log: Logger }): Promise<void> {
  let redis: Redis | undefined;
  if (opts.redisUrl) {
    redis = createRedisClient(opts.redisUrl, 'rate-limit', opts.log, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: HTTP_DEFAULTS.rateLimitRedisCommandTimeoutMs });
    app.addHook('onClose', () => closeRedisClient(redis!));
    // Without an offline queue, requests before the connection is up would all pass uncounted.
    if (!(await waitUntilReady(redis, HTTP_DEFAULTS.rateLimitRedisReadyWaitMs))) opts.log.warn('rate limits: Redis is not reachable yet; requests pass uncounted until it is');
  }
  await app.register(rateLimit, {
    global: false,
    ...(redis ? { redis, nameSpace: 'pin-rate-limit:' } : {}),
    skipOnError: true,
    errorResponseBuilder: (_req, ctx) => new AppError('RATE_LIMITED', `too many requests; retry in ${ctx.after}`, 429),
  });
}

/** Route config: at most `perMinute` requests a minute per authenticated user (0 = no limit). Counted after the route's auth preHandler. */
export function perUserLimit(perMinute: number): { rateLimit: RateLimitOptions | false } {
  if (perMinute === 0) return { rateLimit: false };
  return {
    rateLimit: {
      max: perMinute,
      timeWindow: HTTP_DEFAULTS.rateLimitWindowMs,
      hook: 'preHandler',
      // requireUser ran first (the limiter's hook goes after the route's own preHandler), so there is a principal.
      keyGenerator: (req: FastifyRequest) => `user:${req.principal?.userId ?? `ip:${req.ip}`}`,
    },
  };
}

/**
 * Route config: at most `perMinute` requests a minute per client address (0 = no limit), before
 * anything else runs. IPv6 clients count per /64 (one subscriber's block). The address is the socket's
 * unless TRUST_PROXY names the load balancer.
 */
export function perClientLimit(perMinute: number): { rateLimit: RateLimitOptions | false } {
  if (perMinute === 0) return { rateLimit: false };
  return { rateLimit: { max: perMinute, timeWindow: HTTP_DEFAULTS.rateLimitWindowMs } };
}
