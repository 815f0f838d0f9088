import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { createRedisBackplane } from '../../../src/platform/realtime/backplane-redis.ts';
import { createRedisPresence } from '../../../src/platform/realtime/presence-redis.ts';
import { newId } from '../../../src/platform/time.ts';
import { startTcpProxy } from '../../support/tcp-proxy.ts';

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) throw new Error('REDIS_URL is unset: run the tests with `npm test` (scripts/services.sh starts Redis)');
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
const run = randomBytes(6).toString('hex');

/** Settles as 'pending' when `p` has not settled within `ms`: a hang, told apart from a rejection. */
const settledWithin = (p: Promise<unknown>, ms: number): Promise<'resolved' | 'rejected' | 'pending'> =>
  Promise.race([
    p.then(
      () => 'resolved' as const,
      () => 'rejected' as const,
    ),
    new Promise<'pending'>((resolve) => setTimeout(resolve, ms, 'pending')),
  ]);

test('the Redis command timeout: with the Redis connection hung (open, silent), a backplane PUBLISH and a presence command reject instead of hanging, and work again once it flows', async (t) => {
  const { port } = new URL(redisUrl);
  const proxy = await startTcpProxy(Number(port));
  const url = `redis://127.0.0.1:${proxy.port}`;
  const backplane = await createRedisBackplane({ redisUrl: url, channel: `test:${run}:hub`, logger, commandTimeoutMs: 200 });
  const presence = await createRedisPresence({ redisUrl: url, replicaId: newId(), keyPrefix: `test:${run}:`, logger, commandTimeoutMs: 200 });
  t.after(async () => {
    proxy.restore();
    await Promise.all([backplane.close(), presence.close()]);
  });
  const send = { kind: 'send', origin: 'test', group: 'chat:x', event: 'e', payload: {} } as const;
  await backplane.publish(send);

  proxy.hang();
  const publish = backplane.publish(send);
  const online = presence.isOnline(newId());
  assert.equal(await settledWithin(publish, 5000), 'rejected', 'a hung PUBLISH must fail, not wait forever');
  await assert.rejects(publish, /timed out/i);
  assert.equal(await settledWithin(online, 5000), 'rejected');

  proxy.restore();
  await backplane.publish(send);
  assert.equal(await presence.isOnline(newId()), false);
});
