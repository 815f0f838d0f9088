import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerClient, MessengerError, type HubEvent, type PendingMessage } from '../../../packages/messenger-client/src/index.ts';
import { messengerApp, type MessengerApp } from './support/app.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The client's life as an app drives it, against the real service: stopped when the app goes to
 * the background and started again (queued sends still go), hub calls that fail with typed errors,
 * and one emitter reporting everything, with the 0.2 option callbacks still heard.
 */

const port = (m: MessengerApp) => (m.app.server.address() as { port: number }).port;

async function groupOfTwo(m: MessengerApp) {
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
  await m.accept(bob.token, chat.id);
  return { alice, bob, chat };
}

function clientOf(m: MessengerApp, token: string, extra: Partial<ConstructorParameters<typeof MessengerClient>[0]> = {}): MessengerClient {
  const c = new MessengerClient({ baseUrl: `http://127.0.0.1:${port(m)}`, token, backoff: { minMs: 20, baseMs: 50, capMs: 200 }, ...extra });
  after(() => c.stop());
  return c;
}

describe('client library: stop and start, hub call errors, one emitter', () => {
  test('after stop() and start() the queue sends again: what was sent while stopped, and after', async () => {
    const m = await messengerApp();
    const { alice, chat } = await groupOfTwo(m);
    const a = clientOf(m, alice.token);
    const sent: string[] = [];
    a.on('sent', (_p, msg) => sent.push(msg.body ?? ''));
    await a.start();
    await a.send(chat.id, { kind: 'Text', body: 'before' });
    await waitFor('sent before the stop', () => sent.length === 1);
    await a.stop();
    await a.send(chat.id, { kind: 'Text', body: 'while stopped' });
    assert.equal((await a.pendingSends()).length, 1, 'kept, not sent, while stopped');
    await a.start();
    await a.send(chat.id, { kind: 'Text', body: 'after' });
    await waitFor('both sent after the start', () => sent.length === 3, 15_000);
    assert.deepEqual(sent, ['before', 'while stopped', 'after']);
    assert.deepEqual((await a.pendingSends()).length, 0);
  });

  test('typing() in a chat that is not the caller\'s rejects with a MessengerError carrying the hub\'s code', async () => {
    const m = await messengerApp();
    const { alice } = await groupOfTwo(m);
    const a = clientOf(m, alice.token);
    await a.start();
    const err = await a.typing(crypto.randomUUID()).then(() => assert.fail('typing resolved'), (e: unknown) => e);
    assert.ok(err instanceof MessengerError, `a MessengerError, not ${String(err)}`);
    assert.deepEqual([err.code, err.status, err.retryable], ['MSG_CHAT_NOT_FOUND', 404, false]);
  });

  test('on(): every kind through one emitter, typed by name and as a union; unsubscribing stops it; 0.2 callbacks still heard', async () => {
    const m = await messengerApp();
    const { alice, bob, chat } = await groupOfTwo(m);
    const legacy: string[] = [];
    const b = clientOf(m, bob.token, { onMessage: (msg) => legacy.push(`message:${msg.body}`), onEvent: (name) => name === 'typing' && legacy.push(name) });
    const heard: string[] = [];
    b.on('message', (msg) => heard.push(`message:${msg.body}`));
    b.on('event', (e: HubEvent) => {
      if (e.name === 'typing') heard.push(`typing:${e.payload.UserId}`);
    });
    const off = b.on('typing', (p) => heard.push(`typing by name:${p.ChatId}`));
    b.on('cursor', (c) => assert.equal(typeof c, 'string'));
    const pending: PendingMessage[] = [];
    const a = clientOf(m, alice.token);
    a.on('pending', (p) => pending.push(p));
    b.trackChat(chat.id, 0);
    await Promise.all([a.start(), b.start()]);
    await a.typing(chat.id);
    await waitFor('typing heard', () => heard.length === 2);
    off();
    await a.send(chat.id, { kind: 'Text', body: 'hi' });
    assert.equal(pending.length, 1, 'pending at once');
    await a.settled();
    await m.dispatch();
    await waitFor('the message heard', () => heard.includes('message:hi'));
    assert.deepEqual(heard, [`typing:${alice.id}`, `typing by name:${chat.id}`, 'message:hi']);
    assert.deepEqual(legacy, ['typing', 'message:hi']);
  });
});
