import type { Redis } from 'ioredis';
import type { Logger } from '../observability/logger.ts';
import type { PresenceStore } from './presence.ts';
import { closeRedisClient, createRedisClient, waitUntilReady } from './redis-client.ts';
import { REDIS_COMMAND_TIMEOUT_DEFAULT_MS } from './settings.ts';

export interface RedisPresenceOptions {
  redisUrl: string;
  replicaId: string;
  logger: Logger;
  /** Prefix of the presence keys. Default 'pin:hub:'. */
  keyPrefix?: string;
  /** How long a replica's claim on a user lives without a refresh. Default 60 s; refreshed every third. */
  ttlMs?: number;
  connectTimeoutMs?: number;
  /** REDIS_COMMAND_TIMEOUT: a presence command unanswered by then rejects. */
  commandTimeoutMs?: number;
}

/**
 * One sorted set per user, `<prefix>presence:<userId>`: member = replica id, score = when that
 * replica's claim expires (Redis server time, so replica clocks do not matter). A user is online
 * while some member's score lies in the future. Every write also prunes expired members and pushes
 * the key's own TTL forward, so the key of a user nobody holds disappears by itself.
 * All replicas must use the same TTL (the key TTL is set by whoever refreshed last).
 */
const TOUCH = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
for _, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  redis.call('ZADD', key, now + ttl, ARGV[1])
  redis.call('PEXPIRE', key, ttl)
end
return #KEYS`;

const COUNT_LIVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')`;

type PresenceCommands = Redis & {
  hubPresenceTouch(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number>;
  hubPresenceCount(key: string): Promise<number>;
};

const CHUNK = 500;

export async function createRedisPresence(opts: RedisPresenceOptions): Promise<PresenceStore> {
  const prefix = opts.keyPrefix ?? 'pin:hub:';
  const ttlMs = opts.ttlMs ?? 60_000;
  const client = createRedisClient(opts.redisUrl, 'presence', opts.logger, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: opts.commandTimeoutMs ?? REDIS_COMMAND_TIMEOUT_DEFAULT_MS,
  }) as PresenceCommands;
  client.defineCommand('hubPresenceTouch', { lua: TOUCH });
  client.defineCommand('hubPresenceCount', { numberOfKeys: 1, lua: COUNT_LIVE });
  await waitUntilReady(client, opts.connectTimeoutMs ?? 5000);

  const key = (userId: string) => `${prefix}presence:${userId}`;
  const touch = async (userIds: readonly string[]) => {
    for (let i = 0; i < userIds.length; i += CHUNK) {
      const keys = userIds.slice(i, i + CHUNK).map(key);
      await client.hubPresenceTouch(keys.length, ...keys, opts.replicaId, ttlMs);
    }
  };

  return {
    markOnline: (userId) => touch([userId]),
    async markOffline(userId) {
      await client.zrem(key(userId), opts.replicaId);
    },
    refresh: touch,
    async isOnline(userId) {
      return (await client.hubPresenceCount(key(userId))) > 0;
    },
    refreshIntervalMs: Math.max(50, Math.floor(ttlMs / 3)),
    close: () => closeRedisClient(client),
  };
}
