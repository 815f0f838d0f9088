import type { Logger } from '../observability/logger.ts';
import {
  decodeBackplaneMessage,
  encodeBackplaneMessage,
  type Backplane,
  type BackplaneMessage,
  type BackplaneStatus,
} from './backplane.ts';
import { withTimeout } from '../time.ts';
import { closeRedisClient, createRedisClient, waitUntilReady } from '../redis/index.ts';
import { REALTIME_DEFAULTS } from './defaults.ts';

export interface RedisBackplaneOptions {
  redisUrl: string;
  /** One pub/sub channel for all hub traffic. Default 'pin:hub:messenger'. */
  channel?: string;
  logger: Logger;
  /** How long start-up waits for Redis before going on without it (it keeps reconnecting). Default 5 s. */
  connectTimeoutMs?: number;
  /** Default REALTIME_DEFAULTS.redisCommandTimeoutMs: a PUBLISH unanswered by then rejects (the dispatcher retries the row). */
  commandTimeoutMs?: number;
}

/** What each RedisBackplaneOptions field left out means: REALTIME_DEFAULTS' (defaults.ts). */
const defaults = {
  channel: REALTIME_DEFAULTS.hubRedisChannel,
  connectTimeoutMs: REALTIME_DEFAULTS.redisConnectTimeoutMs,
} as const;

/**
 * Redis pub/sub backplane: one channel, two connections (a subscribed connection cannot publish).
 * Publishing never queues while Redis is away (offline queue off): a send fails fast, so the caller
 * (the realtime dispatcher) keeps its row pending and retries, instead of piling messages in memory.
 * Messages published while a replica's subscriber is disconnected are lost for that replica; that is
 * acceptable because realtime is not the source of truth (clients refill from REST after a gap).
 */
export async function createRedisBackplane(opts: RedisBackplaneOptions): Promise<Backplane> {
  const channel = opts.channel ?? defaults.channel;
  const connectTimeoutMs = opts.connectTimeoutMs ?? defaults.connectTimeoutMs;
  const log = opts.logger;
  const publisher = createRedisClient(opts.redisUrl, 'publisher', log, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: opts.commandTimeoutMs ?? REALTIME_DEFAULTS.redisCommandTimeoutMs,
  });
  // The subscriber keeps its offline queue so the SUBSCRIBE below waits for the first connection;
  // ioredis re-subscribes by itself after every reconnect. No command timeout: a SUBSCRIBE waiting
  // for that first connection must not fail, and nothing waits on this connection's replies.
  const subscriber = createRedisClient(opts.redisUrl, 'subscriber', log);
  let handler: ((message: BackplaneMessage) => void) | undefined;

  subscriber.on('message', (from: string, raw: string) => {
    if (from !== channel || !handler) return;
    const message = decodeBackplaneMessage(raw);
    if (!message) {
      log.warn({ channel }, 'hub backplane: dropped a malformed message');
      return;
    }
    try {
      handler(message);
    } catch (err) {
      log.error({ err }, 'hub backplane: delivering a message failed');
    }
  });

  const subscribed = subscriber.subscribe(channel).then(
    () => true,
    (err: Error) => {
      log.error({ err: { message: err.message } }, 'hub backplane: SUBSCRIBE failed');
      return false;
    },
  );
  const [publisherReady, subscriberReady] = await Promise.all([
    waitUntilReady(publisher, connectTimeoutMs),
    withTimeout(subscribed, connectTimeoutMs, 'SUBSCRIBE').catch(() => false),
  ]);
  if (!publisherReady || !subscriberReady) {
    log.error('hub backplane: Redis is not reachable yet; group sends fail until it is (retrying in the background)');
  }

  return {
    async publish(message) {
      await publisher.publish(channel, encodeBackplaneMessage(message));
    },
    onMessage(h) {
      handler = h;
    },
    async health(): Promise<BackplaneStatus> {
      if (publisher.status !== 'ready' || subscriber.status !== 'ready') return 'down';
      try {
        await withTimeout(publisher.ping(), 1000, 'redis PING');
        return 'ok';
      } catch {
        return 'down';
      }
    },
    async close() {
      handler = undefined;
      await Promise.all([closeRedisClient(subscriber), closeRedisClient(publisher)]);
    },
  };
}
