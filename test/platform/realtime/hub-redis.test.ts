import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { createRedisBackplane } from '../../../src/platform/realtime/backplane-redis.ts';
import { userGroup } from '../../../src/platform/realtime/groups.ts';
import { createRedisPresence } from '../../../src/platform/realtime/presence-redis.ts';
import { newId } from '../../../src/platform/time.ts';
import { connectClient, newUserId, startHubApp, tokenFor } from '../../support/signalr.ts';
import { waitFor } from '../../support/wait.ts';

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) throw new Error('REDIS_URL is unset: run the tests with `npm test` (scripts/services.sh starts Redis)');
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
// Own channel and keys per run, so parallel test files and runs never see each other's traffic.
const run = randomBytes(6).toString('hex');
const channel = `test:${run}:hub`;
const keyPrefix = `test:${run}:`;

/** A replica: its own app, hub, Redis backplane and presence store, sharing the channel and keys. */
async function replica(opts: { presenceTtlMs?: number } = {}) {
  const replicaId = newId();
  const backplane = await createRedisBackplane({ redisUrl: redisUrl!, channel, logger });
  const presence = await createRedisPresence({ redisUrl: redisUrl!, replicaId, keyPrefix, logger, ttlMs: opts.presenceTtlMs });
  return startHubApp({ backplane, presence, replicaId });
}

describe('hub across replicas over the Redis backplane', () => {
  test('a client on replica A receives a group send made on replica B; B sees it online until it leaves', async () => {
    const a = await replica();
    const b = await replica();
    assert.equal(await b.hub.health(), 'ok');
    const userId = newUserId();
    const chat = `chat:${newUserId()}`;
    const client = await connectClient(a.url, await tokenFor(userId), { events: ['message_received'] });
    assert.equal(await b.hub.isOnline(userId), true, 'online on B while connected to A');

    // A membership change made on B applies to A's socket; Redis keeps the order of one publisher's
    // messages, so the send that follows finds the socket in the group.
    await b.hub.addUserToGroup(userId, chat);
    await b.hub.send(chat, 'message_received', { Seq: 1 });
    await waitFor('the cross-replica group send', () => client.received.length > 0);
    assert.deepEqual(client.received[0], { event: 'message_received', payload: { Seq: 1 } });

    await b.hub.send(userGroup(userId), 'message_received', { Seq: 2 });
    await waitFor('the user-group send', () => client.received.some((r) => (r.payload as { Seq: number }).Seq === 2));

    await client.connection.stop();
    await waitFor('offline on B after the disconnect', async () => !(await b.hub.isOnline(userId)));
  });

  test('a replica keeps refreshing its users, so presence outlives the TTL while the user stays', async () => {
    const a = await replica({ presenceTtlMs: 300 });
    const b = await replica({ presenceTtlMs: 300 });
    const userId = newUserId();
    await connectClient(a.url, await tokenFor(userId));
    await new Promise((r) => setTimeout(r, 900)); // three TTLs: only refreshes keep the entry alive
    assert.equal(await b.hub.isOnline(userId), true);
  });

  test("a crashed replica's presence expires on its own", async () => {
    const crashed = await createRedisPresence({ redisUrl: redisUrl!, replicaId: newId(), keyPrefix, logger, ttlMs: 300 });
    const observer = await createRedisPresence({ redisUrl: redisUrl!, replicaId: newId(), keyPrefix, logger, ttlMs: 300 });
    after(() => observer.close());
    const userId = newUserId();
    await crashed.markOnline(userId);
    assert.equal(await observer.isOnline(userId), true);
    await crashed.close(); // gone without markOffline and without refreshing
    await waitFor('the entry to expire', async () => !(await observer.isOnline(userId)));
  });

  test('with Redis unreachable, health is down and a send fails fast instead of queueing', async () => {
    const backplane = await createRedisBackplane({ redisUrl: 'redis://127.0.0.1:1', channel, logger, connectTimeoutMs: 200 });
    const { hub } = await startHubApp({ backplane });
    assert.equal(await hub.health(), 'down');
    await assert.rejects(hub.send('chat:x', 'message_received', {}));
  });
});
