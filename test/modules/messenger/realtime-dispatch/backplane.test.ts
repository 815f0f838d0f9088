import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connectClient } from '../../../support/signalr.ts';
import { startPrivateRedis } from '../../../support/redis.ts';
import { messengerApp } from '../support/app.ts';
import { secondReplica } from '../support/replica.ts';
import { outboxRow } from '../support/dispatch.ts';
import { waitFor } from '../../../support/wait.ts';

const sharedRedis = process.env.REDIS_URL;
if (!sharedRedis) throw new Error('REDIS_URL is unset: run the tests with `npm test` (scripts/services.sh starts Redis)');

type Chat = { id: string };

describe('hub backplane (Redis): replicas and outages', () => {
  test('two app instances with the Redis backplane: a message sent through one reaches a client connected to the other, and only chat members', async () => {
    const env = { REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL: sharedRedis };
    const a = await messengerApp(env);
    const b = await secondReplica(a, env);
    const [alice, bob, carol] = [await a.user(), await a.user(), await a.user()];
    const chat = (await a.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
    const onB = await connectClient(b.url, bob.token, { events: ['message_received', 'chat_updated'] });
    const outsider = await connectClient(b.url, carol.token, { events: ['message_received'] });
    await a.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'across replicas' });
    await a.dispatch();
    await waitFor('the message on the other replica', () => onB.received.some((r) => r.event === 'message_received'));
    assert.equal((onB.received.find((r) => r.event === 'message_received')!.payload as { Body: string }).Body, 'across replicas');

    // A removal made on A takes bob's socket on B out of the chat at once.
    await a.call(alice.token, 'DELETE', `/api/messenger/chats/${chat.id}/participants/${bob.id}`);
    await a.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'after removal' });
    await a.dispatch();
    await waitFor('bob told of his removal', () => onB.received.some((r) => r.event === 'chat_updated' && (r.payload as { Change: string }).Change === 'ParticipantRemoved'));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(onB.received.filter((r) => r.event === 'message_received').length, 1, 'nothing after the removal');
    assert.equal(outsider.received.length, 0, 'a client never sees a chat it is not in');
  });

  test('backplane down: rows stay Pending with the backoff; after Redis is back they are delivered', async () => {
    const redis = await startPrivateRedis();
    const m = await messengerApp({ REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL: redis.url });
    const hub = m.app.platform.hub;
    const [alice, bob] = [await m.user(), await m.user()];
    const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
    const client = await m.connect(bob.token, ['message_received']);
    await m.dispatch();

    await redis.kill();
    await waitFor('the backplane to be down', async () => (await hub.health()) === 'down');
    const sent = await m.call<{ id: string }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'during the outage' });
    assert.equal(sent.status, 201, 'sending does not depend on the hub');
    const { rows } = await m.pool.query<{ id: string }>(`select id from push.realtime_outbox where message_id = $1`, [sent.body.id]);
    const rowId = rows[0]!.id;
    const counts = await m.dispatch();
    assert.equal(counts.retried, 1);
    let row = await outboxRow(m.pool, rowId);
    assert.deepEqual([row.status, row.attempts], ['Pending', 1]);
    const delay = row.next_attempt_at.getTime() - m.clock.now().getTime();
    assert.ok(delay >= 2000 && delay <= 2400, `backoff 2 s + jitter, got ${delay}`);
    assert.ok(row.last_error);
    assert.equal(client.received.length, 0);

    await redis.restart();
    await waitFor('the backplane to reconnect', async () => (await hub.health()) === 'ok', 15_000);
    assert.equal((await m.dispatch()).claimed, 0, 'not before its backoff');
    m.clock.advance(2400);
    assert.equal((await m.dispatch()).dispatched, 1);
    await waitFor('the delivery after recovery', () => client.received.length === 1);
    row = await outboxRow(m.pool, rowId);
    assert.deepEqual([row.status, row.attempts, row.last_error], ['Done', 2, null]);
  });
});
