import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerClient, MessengerError, retryAfterMsOf, retryDelayMs, type ChatMessage, type MessengerClientOptions, type PendingMessage, type ResyncNeeded, type SentMessage } from '../../../packages/messenger-client/src/index.ts';
import { REALTIME_RETENTION_JOB } from '../../../src/platform/push/retention.job.ts';
import { messengerApp, type MessengerApp } from './support/app.ts';
import { startTcpProxy } from '../../support/tcp-proxy.ts';
import { waitFor } from '../../support/wait.ts';
import { PUSH_DEFAULTS } from '../../../src/platform/push/index.ts';

/**
 * The client library as an app uses it, against the real service: sends through the offline queue
 * (pending at once, exactly once when the network is back, the same clientMessageId on a retry),
 * mark-read, resuming every kind of event from the last Cursor after a reconnect (the per-chat Seq
 * refill after a 410), and reconnects with full jitter that honour the server's Retry-After.
 */

type Chat = { id: string };
const port = (m: MessengerApp) => (m.app.server.address() as { port: number }).port;

function startClient(port: number, token: string, extra: Partial<MessengerClientOptions> = {}) {
  const messages: ChatMessage[] = [];
  const events: { event: string; payload: Record<string, unknown> }[] = [];
  const pending: PendingMessage[] = [];
  const sent: { pending: PendingMessage; message: SentMessage }[] = [];
  const client = new MessengerClient({
    baseUrl: `http://127.0.0.1:${port}`,
    accessTokenFactory: () => token,
    backoff: { minMs: 20, baseMs: 50, capMs: 200 },
    onMessage: (m) => messages.push(m),
    onEvent: (event, payload) => events.push({ event, payload: payload as unknown as Record<string, unknown> }),
    onPending: (p) => pending.push(p),
    onSent: (p, message) => sent.push({ pending: p, message }),
    ...extra,
  });
  after(() => client.stop());
  return { client, messages, events, pending, sent };
}

async function chatOfTwo(m: MessengerApp) {
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<Chat>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
  await m.accept(bob.token, chat.id); // consent: bob's read receipts reach the chat only once accepted
  return { alice, bob, chat };
}

const storedMessages = async (m: MessengerApp, chatId: string) =>
  (await m.pool.query<{ body: string; client_message_id: string }>(`select body, client_message_id from messenger.messages where chat_id = $1 order by seq`, [chatId])).rows;

describe('client library: sends, read marks, resume by cursor, reconnect backoff', () => {
  test('sends made offline show at once as pending and land exactly once, in order, when the network is back', async () => {
    const m = await messengerApp();
    const { alice, bob, chat } = await chatOfTwo(m);
    const proxy = await startTcpProxy(port(m));
    const a = startClient(proxy.port, alice.token);
    const b = startClient(port(m), bob.token);
    b.client.trackChat(chat.id, 0);
    await Promise.all([a.client.start(), b.client.start()]);
    proxy.block();
    proxy.cut();
    await waitFor('alice offline', () => a.client.state !== 'connected');
    const first = await a.client.send(chat.id, { kind: 'Text', body: 'one' });
    const second = await a.client.send(chat.id, { kind: 'Text', body: 'two' });
    assert.deepEqual(a.pending.map((p) => p.content.body), ['one', 'two'], 'shown as pending at once');
    assert.equal((await storedMessages(m, chat.id)).length, 0);
    assert.equal((await a.client.pendingSends()).length, 2);
    proxy.unblock();
    await waitFor('both acknowledged', () => a.sent.length === 2, 15_000);
    assert.deepEqual(a.sent.map((s) => s.pending.clientMessageId), [first.clientMessageId, second.clientMessageId]);
    assert.deepEqual(a.sent.map((s) => s.message.clientMessageId), [first.clientMessageId, second.clientMessageId]);
    assert.deepEqual(await storedMessages(m, chat.id), [
      { body: 'one', client_message_id: first.clientMessageId },
      { body: 'two', client_message_id: second.clientMessageId },
    ]);
    assert.equal((await a.client.pendingSends()).length, 0);
    await m.dispatch();
    await waitFor('bob gets both', () => b.messages.length === 2);
    await b.client.settled();
    assert.deepEqual(b.messages.map((x) => x.body), ['one', 'two'], 'the other side gets each once');
  });

  test('a send whose answer was lost is retried with the same clientMessageId and answered with the stored message: one message, acknowledged once', async () => {
    const m = await messengerApp();
    const { alice, chat } = await chatOfTwo(m);
    let dropped = 0;
    // The request reaches the server; its answer is lost on the way back.
    const lossy: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (init?.method === 'POST' && String(input).endsWith('/messages') && dropped++ === 0) throw new TypeError('network: the answer was lost');
      return res;
    };
    const a = startClient(port(m), alice.token, { fetch: lossy });
    await a.client.start();
    await a.client.send(chat.id, { kind: 'Text', body: 'once' });
    await waitFor('acknowledged', () => a.sent.length === 1, 15_000);
    assert.equal(dropped, 2, 'sent twice');
    const stored = await storedMessages(m, chat.id);
    assert.equal(stored.length, 1);
    assert.equal(a.sent[0]!.message.clientMessageId, stored[0]!.client_message_id);
  });

  test('a send refused for good is reported and dropped, not retried forever', async () => {
    const m = await messengerApp();
    const { alice } = await chatOfTwo(m);
    const failed: { code: string }[] = [];
    const a = startClient(port(m), alice.token, { onSendFailed: (_p, e) => failed.push(e) });
    await a.client.start();
    await a.client.send('00000000-0000-4000-8000-000000000000', { kind: 'Text', body: 'nowhere' });
    await waitFor('refused', () => failed.length === 1);
    assert.equal(failed[0]!.code, 'MSG_CHAT_NOT_FOUND');
    assert.equal((await a.client.pendingSends()).length, 0);
  });

  test('markRead stores the read mark and the others get read_receipt_updated', async () => {
    const m = await messengerApp();
    const { alice, bob, chat } = await chatOfTwo(m);
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'hi' });
    const a = startClient(port(m), alice.token);
    const b = startClient(port(m), bob.token);
    await Promise.all([a.client.start(), b.client.start()]);
    assert.equal(await b.client.markRead(chat.id, 1), 1);
    await m.dispatch();
    await waitFor('the receipt', () => a.events.some((e) => e.event === 'read_receipt_updated'));
    assert.deepEqual(a.events.find((e) => e.event === 'read_receipt_updated')!.payload.LastReadSeq, 1);
  });

  test('after a reconnect every kind of event pushed meanwhile arrives through the cursor, once each', async () => {
    const m = await messengerApp();
    const { alice, bob, chat } = await chatOfTwo(m);
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'hi' });
    await m.dispatch();
    const proxy = await startTcpProxy(port(m));
    const b = startClient(proxy.port, bob.token);
    await b.client.start();
    proxy.block();
    proxy.cut();
    await waitFor('bob offline', () => b.client.state !== 'connected');
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/read`, { seq: 1 });
    await m.call(alice.token, 'PATCH', `/api/messenger/chats/${chat.id}`, { title: 'Renamed' });
    await m.dispatch(); // pushed to nobody: bob is offline
    proxy.unblock();
    await waitFor('the missed events', () => b.events.length >= 2, 15_000);
    await b.client.settled();
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(
      b.events.map((e) => [e.event, e.payload.Change ?? e.payload.LastReadSeq]),
      [
        ['read_receipt_updated', 1],
        ['chat_updated', 'Renamed'],
      ],
    );
  });

  test('a cursor past retention is reported as resyncNeeded and falls back to the per-chat Seq refill: the missed message still arrives, once', async () => {
    const m = await messengerApp();
    const { alice, bob, chat } = await chatOfTwo(m);
    const proxy = await startTcpProxy(port(m));
    const b = startClient(proxy.port, bob.token);
    const resyncs: ResyncNeeded[] = [];
    b.client.on('resyncNeeded', (r) => resyncs.push(r));
    b.client.trackChat(chat.id, 0);
    await b.client.start();
    await m.dispatch();
    await b.client.settled();
    proxy.block();
    proxy.cut();
    await waitFor('bob offline', () => b.client.state !== 'connected');
    // Read once offline: frames of the dispatch above may still have been arriving at settled().
    const refused = b.client.cursor;
    m.clock.advance(PUSH_DEFAULTS.eventsRetentionMs + 3_600_000);
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'while away' });
    await m.dispatch();
    m.clock.advance(PUSH_DEFAULTS.eventsRetentionMs + 3_600_000);
    assert.equal((await m.app.platform.runner.runNow(REALTIME_RETENTION_JOB)).outcome, 'success');
    proxy.unblock();
    await waitFor('the refill', () => b.messages.length === 1, 15_000);
    await b.client.settled();
    assert.deepEqual(b.messages.map((x) => x.body), ['while away']);
    assert.deepEqual(resyncs, [{ code: 'MSG_EVENTS_CURSOR_EXPIRED', status: 410, cursor: refused }], 'the app is told to reload its chat list, once');
    assert.notEqual(b.client.cursor, refused, 'the client went on from the head');
  });

  test('a cursor past the stream head (the server database restored) starts again from the head once, not on every reconnect', async () => {
    const m = await messengerApp();
    const { alice, bob, chat } = await chatOfTwo(m);
    const resumes: number[] = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (String(input).includes('/api/events?after=')) resumes.push(res.status);
      return res;
    };
    const proxy = await startTcpProxy(port(m));
    const b = startClient(proxy.port, bob.token, { fetch: recording });
    b.client.trackChat(chat.id, 0);
    await b.client.start();
    await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'before' });
    await m.dispatch();
    await waitFor('the message and its cursor', () => b.messages.length === 1);
    const reconnect = async () => {
      proxy.block();
      proxy.cut();
      await waitFor('bob offline', () => b.client.state !== 'connected');
      const seen = resumes.length;
      proxy.unblock();
      await waitFor('a resume', () => resumes.length > seen && b.client.state === 'connected', 15_000);
      await b.client.settled();
    };
    // The stream loses every position the client saw, as a restore to an earlier point would.
    await m.pool.query('delete from push.realtime_events');
    await reconnect();
    await reconnect();
    assert.deepEqual(resumes, [400, 200], 'refused once as ahead, then resumed from the head');
    assert.deepEqual(b.messages.map((x) => x.body), ['before']);
  });

  test('reconnect delays: full jitter, never immediate, at least a Retry-After the server named', () => {
    const opts = { minMs: 250, baseMs: 1000, capMs: 30_000 };
    assert.equal(retryDelayMs(0, opts, 0, () => 0), 250, 'the first retry is not immediate');
    assert.equal(retryDelayMs(0, opts, 0, () => 1), 1000);
    assert.equal(retryDelayMs(3, opts, 0, () => 1), 8000);
    assert.equal(retryDelayMs(20, opts, 0, () => 1), 30_000, 'capped');
    assert.equal(retryDelayMs(0, opts, 5000, () => 0.5), 5000, 'Retry-After is a floor');
    const spread = new Set(Array.from({ length: 50 }, () => retryDelayMs(4, opts)));
    assert.ok(spread.size > 40, 'clients of one deploy come back spread out');
    assert.equal(retryAfterMsOf('3'), 3000);
    assert.equal(retryAfterMsOf(new Date(Date.now() + 10_000).toUTCString(), Date.now()) > 8000, true);
    assert.equal(retryAfterMsOf(null), 0);
  });

  test("a replica past its connect rate answers negotiate 503 with Retry-After: the client waits at least that long, then connects", async () => {
    const m = await messengerApp({ HUB_MAX_CONNECTS_PER_SECOND: '1' });
    const { alice, bob } = await chatOfTwo(m);
    const negotiations: { at: number; status: number }[] = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (String(input).includes('/negotiate')) negotiations.push({ at: Date.now(), status: res.status });
      return res;
    };
    const b = startClient(port(m), bob.token, { fetch: recording });
    // Another client's negotiate takes this second's place right before bob's.
    await fetch(`http://127.0.0.1:${port(m)}/hubs/messenger/negotiate?negotiateVersion=1`, { method: 'POST', headers: { authorization: `Bearer ${alice.token}` } });
    // start() reports the refusal with the server's code and Retry-After, and the client keeps trying.
    const busy = await b.client.start().then(() => undefined, (e: MessengerError) => e);
    assert.deepEqual([busy?.code, busy?.status, busy?.retryAfterMs], ['HUB_BUSY', 503, 1000]);
    await waitFor('bob connected', () => b.client.state === 'connected', 15_000);
    const refused = negotiations.findIndex((n) => n.status === 503);
    assert.ok(refused >= 0, 'bob was turned away first');
    const next = negotiations[refused + 1]!;
    assert.ok(next.at - negotiations[refused]!.at >= 1000, `waited ${next.at - negotiations[refused]!.at} ms after a Retry-After of 1 s`);
  });
});
