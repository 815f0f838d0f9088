import type { Redis } from 'ioredis';
import type { Logger } from '../observability/logger.ts';
import type { PresenceStore } from './presence.ts';
import { closeRedisClient, createRedisClient, waitUntilReady } from '../redis/index.ts';
import { REALTIME_DEFAULTS } from './defaults.ts';

export interface RedisPresenceOptions {
  redisUrl: string;
  replicaId: string;
  logger: Logger;
  /** Prefix of the presence keys. Default 'pin:hub:'. */
  keyPrefix?: string;
  /** How long a replica's claim on a user lives without a refresh. Default 60 s; refreshed every third. */
  ttlMs?: number;
  connectTimeoutMs?: number;
  /** Default REALTIME_DEFAULTS.redisCommandTimeoutMs: a presence command unanswered by then rejects. */
  commandTimeoutMs?: number;
}

/** What each RedisPresenceOptions field left out means: REALTIME_DEFAULTS' (defaults.ts). */
const defaults = {
  keyPrefix: REALTIME_DEFAULTS.hubRedisKeyPrefix,
  ttlMs: REALTIME_DEFAULTS.hubPresenceTtlMs,
  connectTimeoutMs: REALTIME_DEFAULTS.redisConnectTimeoutMs,
} as const;

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

/** Claims this replica and answers how many other replicas held the user before (0: came online). */
const CLAIM = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREM', KEYS[1], ARGV[1])
local others = redis.call('ZCARD', KEYS[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return others`;

/**
 * Drops this replica's claim and answers how many live claims remain; at none, the user went
 * offline and KEYS[2] records when (ARGV[2], ms) for ARGV[3] ms.
 */
const RELEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[1], ARGV[1])
local live = redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
if live == 0 then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
return live`;

type PresenceCommands = Redis & {
  hubPresenceTouch(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number>;
  hubPresenceCount(key: string): Promise<number>;
  hubPresenceClaim(key: string, replicaId: string, ttlMs: number): Promise<number>;
  hubPresenceRelease(key: string, lastSeenKey: string, replicaId: string, atMs: number, keepMs: number): Promise<number>;
};


export async function createRedisPresence(opts: RedisPresenceOptions): Promise<PresenceStore> {
  const prefix = opts.keyPrefix ?? defaults.keyPrefix;
  const ttlMs = opts.ttlMs ?? defaults.ttlMs;
  const client = createRedisClient(opts.redisUrl, 'presence', opts.logger, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: opts.commandTimeoutMs ?? REALTIME_DEFAULTS.redisCommandTimeoutMs,
  }) as PresenceCommands;
  client.defineCommand('hubPresenceTouch', { lua: TOUCH });
  client.defineCommand('hubPresenceCount', { numberOfKeys: 1, lua: COUNT_LIVE });
  client.defineCommand('hubPresenceClaim', { numberOfKeys: 1, lua: CLAIM });
  client.defineCommand('hubPresenceRelease', { numberOfKeys: 2, lua: RELEASE });
  await waitUntilReady(client, opts.connectTimeoutMs ?? defaults.connectTimeoutMs);

  const key = (userId: string) => `${prefix}presence:${userId}`;
  const lastSeenKey = (userId: string) => `${prefix}lastseen:${userId}`;
  const touch = async (userIds: readonly string[]) => {
    for (let i = 0; i < userIds.length; i += REALTIME_DEFAULTS.hubPresenceChunk) {
      const keys = userIds.slice(i, i + REALTIME_DEFAULTS.hubPresenceChunk).map(key);
      await client.hubPresenceTouch(keys.length, ...keys, opts.replicaId, ttlMs);
    }
  };

  return {
    async markOnline(userId) {
      return (await client.hubPresenceClaim(key(userId), opts.replicaId, ttlMs)) === 0;
    },
    async markOffline(userId, atMs) {
      return (await client.hubPresenceRelease(key(userId), lastSeenKey(userId), opts.replicaId, atMs, REALTIME_DEFAULTS.hubLastSeenKeepMs)) === 0;
    },
    refresh: touch,
    async isOnline(userId) {
      return (await client.hubPresenceCount(key(userId))) > 0;
    },
    async status(userIds) {
      if (userIds.length === 0) return [];
      const pipeline = client.pipeline() as unknown as PresenceCommands & { exec(): Promise<[Error | null, unknown][] | null> };
      for (const id of userIds) {
        pipeline.hubPresenceCount(key(id));
        pipeline.get(lastSeenKey(id));
      }
      const replies = (await pipeline.exec()) ?? [];
      return userIds.map((_, i) => {
        const [countErr, count] = replies[2 * i] ?? [new Error('no reply')];
        const [seenErr, seen] = replies[2 * i + 1] ?? [new Error('no reply')];
        if (countErr || seenErr) throw countErr ?? seenErr;
        return { online: Number(count) > 0, lastSeenAtMs: seen === null ? null : Number(seen) };
      });
    },
    refreshIntervalMs: Math.max(50, Math.floor(ttlMs / 3)),
    close: () => closeRedisClient(client),
  };
}
