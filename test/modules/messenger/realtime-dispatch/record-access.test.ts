import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connectClient, type TestClient } from '../../../support/signalr.ts';
import { startPrivateRedis } from '../../../support/redis.ts';
import { startTcpProxy } from '../../../support/tcp-proxy.ts';
import { messengerApp } from '../support/app.ts';
import { secondReplica } from '../support/replica.ts';
import { waitFor } from '../../../support/wait.ts';

type Chat = { id: string };
const bodies = (c: TestClient) => c.received.filter((r) => r.event === 'message_received').map((r) => (r.payload as { Body: string }).Body);

describe('record-level access on every replica', () => {
  test('a participant removed while its replica was cut off from Redis receives nothing more from the chat there', async () => {
    const redis = await startPrivateRedis();
    const a = await messengerApp({ REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL: redis.url });
    const proxy = await startTcpProxy(Number(new URL(redis.url).port));
    const b = await secondReplica(a, { REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL: `redis://127.0.0.1:${proxy.port}` });
    const [alice, bob, carol] = [await a.user(), await a.user(), await a.user()];
    const chat = (await a.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id, carol.id] })).body;
    const base = `/api/messenger/chats/${chat.id}`;
    const bobOnB = await connectClient(b.url, bob.token, { events: ['message_received', 'chat_updated'] });
    const carolOnB = await connectClient(b.url, carol.token, { events: ['message_received'] });
    await a.call(alice.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'before' });
    await a.dispatch();
    await waitFor('both on B get the first message', () => bodies(bobOnB).length === 1 && bodies(carolOnB).length === 1);

    // B's Redis connections drop and stay down: the removal's leave (right after the commit and
    // again when its ChatUpdated is dispatched) never reaches B.
    proxy.refuse();
    await waitFor('B to lose its backplane', async () => (await b.app.platform.hub.health()) === 'down');
    assert.equal((await a.call(alice.token, 'DELETE', `${base}/participants/${bob.id}`)).status, 204);
    await a.dispatch();
    proxy.restore();
    await waitFor('B to resubscribe', async () => (await b.app.platform.hub.health()) === 'ok', 20_000);

    // Messages until one reaches carol on B (a send that races the resubscribe may be lost for B).
    for (let i = 0; bodies(carolOnB).length < 2; i++) {
      assert.ok(i < 20, 'carol on B never received a message after the reconnect');
      await a.call(alice.token, 'POST', `${base}/messages`, { kind: 'Text', body: `after ${i}` });
      await a.dispatch();
      await waitFor('the message on B', () => bodies(carolOnB).length >= 2, 500).catch(() => {});
    }
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(bodies(bobOnB), ['before'], 'the removed member got nothing after its removal');
    assert.equal(bobOnB.closed, false, 'its connection itself stays (it still gets its own user group)');
  });
});
