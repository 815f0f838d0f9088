import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerClient, type ChatMessage } from '../../../packages/messenger-client/src/index.ts';
import { messengerApp, type MessengerApp } from './support/app.ts';
import { startTcpProxy } from '../../support/tcp-proxy.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';
import { MESSAGE_MAX_CHARS } from '../../../src/modules/messenger/messages/rules.ts';

type Chat = { id: string };

/** A MessengerClient for `token` against `port`, recording what it hands to the app. */
async function startClient(port: number, token: string, chatId: string) {
  const messages: ChatMessage[] = [];
  const changes: Partial<ChatMessage>[] = [];
  const client = new MessengerClient({
    baseUrl: `http://127.0.0.1:${port}`,
    accessTokenFactory: () => token,
    backoff: { minMs: 20, baseMs: 50, capMs: 200 },
    onMessage: (m) => messages.push(m),
    onMessageChanged: (m) => changes.push(m),
  });
  client.trackChat(chatId, 0);
  await client.start();
  after(() => client.stop());
  return { client, messages, changes, seqs: () => messages.map((m) => m.seq) };
}

async function chatOfTwo(m: MessengerApp) {
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
  const send = (body: string) => m.call<{ id: string; seq: number }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body });
  return { alice, bob, chat, send };
}

const port = (m: MessengerApp) => (m.app.server.address() as { port: number }).port;

describe('client library: dedupe, Seq order, refill from list-messages', () => {
  test('client dedupe: a double delivery of one (ChatId, Seq) shows one message (a plain SignalR connection sees both frames)', async () => {
    const m = await messengerApp();
    const { bob, chat, send } = await chatOfTwo(m);
    const c = await startClient(port(m), bob.token, chat.id);
    const plain = await m.connect(bob.token, ['message_received']);
    const sent = (await send('once')).body;
    await m.dispatch();
    // At-least-once: the same push intent again (a runner crashed after the push, before its outcome).
    await m.pool.query(
      `insert into push.realtime_outbox (id, kind, target_kind, chat_id, message_id, seq, next_attempt_at, created_at, updated_at)
       select gen_random_uuid(), kind, target_kind, chat_id, message_id, seq, created_at, created_at, updated_at
         from push.realtime_outbox where message_id = $1`,
      [sent.id],
    );
    await m.dispatch();
    await waitFor('both frames on the plain connection', () => plain.received.length === 2);
    assert.deepEqual(c.seqs(), [1]);
    assert.equal(c.messages[0]!.body, 'once');
  });

  test('Seq order: a push that overtakes a retried one is held back, the gap is filled from list-messages, late retries are dropped', async () => {
    const m = await messengerApp();
    const { bob, chat, send } = await chatOfTwo(m);
    const c = await startClient(port(m), bob.token, chat.id);
    for (const body of ['one', 'two', 'three']) await send(body);
    // Seq 1 and 2 wait in backoff; Seq 3 goes out first.
    await m.pool.query(`update push.realtime_outbox set next_attempt_at = next_attempt_at + interval '10 seconds' where seq in (1, 2)`);
    await m.dispatch();
    await waitFor('the gap filled through REST', () => c.messages.length === 3);
    assert.deepEqual(c.messages.map((x) => [x.seq, x.body]), [[1, 'one'], [2, 'two'], [3, 'three']]);
    m.clock.advance(10_000);
    assert.equal((await m.dispatch()).dispatched, 2);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(c.seqs(), [1, 2, 3], 'the late pushes are duplicates');
  });

  test('reconnect: after the network drops, the client reconnects with backoff and refills what it missed, in order, once', async () => {
    const m = await messengerApp();
    const { bob, chat, send } = await chatOfTwo(m);
    const proxy = await startTcpProxy(port(m));
    const c = await startClient(proxy.port, bob.token, chat.id);
    await send('before');
    await m.dispatch();
    await waitFor('the first message', () => c.messages.length === 1);
    proxy.block();
    proxy.cut();
    await waitFor('the client to notice', () => c.client.state !== 'connected');
    for (const body of ['missed 1', 'missed 2']) await send(body);
    await m.dispatch(); // pushed to nobody: bob has no connection
    proxy.unblock();
    await waitFor('the missed messages after the reconnect', () => c.messages.length === 3);
    await c.client.idle();
    assert.deepEqual(c.messages.map((x) => x.body), ['before', 'missed 1', 'missed 2']);
    assert.equal(c.client.state, 'connected');
  });

  test('slow consumer: a client that stops reading is closed once its buffer passes the cap; it reconnects and refills from REST', async () => {
    // No send limit: the socket buffers between the server and the stalled proxy must fill first, a
    // few megabytes of messages of at most MESSAGE_MAX_CHARS each.
    const m = await messengerApp({ MESSENGER_RATE_LIMIT_MESSAGE_SENDS_PER_MINUTE: '0' }, {}, { hubMaxBufferedBytes: 65536 });
    const { bob, chat, send } = await chatOfTwo(m);
    const proxy = await startTcpProxy(port(m));
    const c = await startClient(proxy.port, bob.token, chat.id);
    await send('warm up');
    await m.dispatch();
    await waitFor('the first message', () => c.messages.length === 1);
    proxy.stall();
    const big = 'x'.repeat(MESSAGE_MAX_CHARS - 10);
    let sent = 1;
    await waitFor(
      'the slow-consumer close',
      async () => {
        for (let i = 0; i < 100; i++, sent++) assert.equal((await send(`${sent + 1}:${big}`)).status, 201);
        await m.dispatch();
        return (await metricValue(m.app.platform.registry, 'hub_slow_consumer_closes_total')) === 1;
      },
      60_000,
    );
    // The server kept at most the cap per socket: it closed the socket instead of buffering more.
    assert.equal(await metricValue(m.app.platform.registry, 'hub_disconnects_total', { reason: 'slow_consumer' }), 1);
    proxy.resume(); // the client wakes up: it reads what was buffered, then finds the connection closed
    await waitFor('every message after the reconnect', () => c.messages.length === sent, 30_000);
    await c.client.idle();
    assert.deepEqual(c.seqs(), Array.from({ length: sent }, (_, i) => i + 1), 'all of them, in order, once');
  });
});
