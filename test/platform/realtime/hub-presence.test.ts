import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { createRedisBackplane } from '../../../src/platform/realtime/backplane-redis.ts';
import type { PresenceChange } from '../../../src/platform/realtime/index.ts';
import { createRedisPresence } from '../../../src/platform/realtime/presence-redis.ts';
import { newId } from '../../../src/platform/time.ts';
import { connectClient, newUserId, startHubApp, tokenFor } from '../../support/signalr.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * Presence across two replicas over Redis: a user is online while any replica holds one of their
 * connections; the flip to online is announced when the first connection anywhere opens, the flip
 * to offline (with the last-seen time) when the last one anywhere closes, and both replicas answer
 * the same state and last-seen time.
 */

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) throw new Error('REDIS_URL is unset: run the tests with `npm test` (scripts/services.sh starts Redis)');
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
const run = randomBytes(6).toString('hex');

async function replica() {
  const replicaId = newId();
  const backplane = await createRedisBackplane({ redisUrl: redisUrl!, channel: `test:${run}:hub`, logger });
  const presence = await createRedisPresence({ redisUrl: redisUrl!, replicaId, keyPrefix: `test:${run}:`, logger });
  const app = await startHubApp({ backplane, presence, replicaId });
  const changes: PresenceChange[] = [];
  app.hub.onPresenceChange((c) => changes.push(c));
  return { ...app, changes };
}

describe('hub presence across replicas', () => {
  test('online once while any replica holds a connection; offline with last seen when the last one anywhere closes', async () => {
    const [a, b] = [await replica(), await replica()];
    const userId = newUserId();
    const token = await tokenFor(userId);
    const onA = await connectClient(a.url, token);
    await waitFor('online announced by A', () => a.changes.length === 1);
    assert.deepEqual(a.changes, [{ userId, online: true, lastSeenAt: null }]);
    const onB = await connectClient(b.url, token);
    assert.deepEqual(await b.hub.presenceOf([userId]), [{ userId, online: true, lastSeenAt: null }]);

    await onA.connection.stop();
    assert.deepEqual((await a.hub.presenceOf([userId]))[0]!.online, true, 'still online: B holds a connection');
    const before = Date.now();
    await onB.connection.stop();
    await waitFor('offline announced by B', () => b.changes.length === 1);
    assert.equal(a.changes.length, 1, 'A announced no offline while B held the user');
    const [offline] = b.changes;
    assert.equal(offline!.online, false);
    assert.ok(offline!.lastSeenAt && offline!.lastSeenAt.getTime() >= before - 1000, 'last seen when the last connection closed');
    for (const hub of [a.hub, b.hub]) assert.deepEqual(await hub.presenceOf([userId]), [{ userId, online: false, lastSeenAt: offline!.lastSeenAt }]);
  });

  test('a user never seen is offline with no last-seen time', async () => {
    const a = await replica();
    const userId = newUserId();
    assert.deepEqual(await a.hub.presenceOf([userId]), [{ userId, online: false, lastSeenAt: null }]);
  });
});
