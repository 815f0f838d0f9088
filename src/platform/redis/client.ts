import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../observability/logger.ts';
import { withTimeout } from '../time.ts';
import { REDIS_DEFAULTS } from './defaults.ts';

/**
 * An ioredis client that logs its availability once per change (ioredis reports every failed
 * reconnect attempt as an 'error'; logging each would flood the log during an outage) and keeps
 * reconnecting on its own.
 */
export function createRedisClient(url: string, role: string, logger: Logger, options: RedisOptions = {}): Redis {
  const client = new Redis(url, { connectionName: `pin-hub-${role}`, ...options });
  let up = false;
  client.on('ready', () => {
    if (!up) logger.info({ redis: role }, 'hub redis connection ready');
    up = true;
  });
  client.on('error', (err: Error) => {
    if (up) logger.warn({ redis: role, err: { message: err.message } }, 'hub redis connection lost; reconnecting');
    else logger.debug({ redis: role, err: { message: err.message } }, 'hub redis connection attempt failed');
    up = false;
  });
  client.on('close', () => {
    if (up) logger.warn({ redis: role }, 'hub redis connection closed; reconnecting');
    up = false;
  });
  return client;
}

/** Waits up to `timeoutMs` for the client to be ready; false on timeout (the client keeps trying). */
export function waitUntilReady(client: Redis, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    client.once('ready', onReady);
  });
}

/** QUIT when connected (lets written commands finish), else just drop the reconnect loop. */
export async function closeRedisClient(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'ready') {
    try {
      await withTimeout(client.quit(), REDIS_DEFAULTS.redisQuitTimeoutMs, 'redis QUIT');
      return;
    } catch {
      // fall through to a hard disconnect
    }
  }
  client.disconnect();
}
