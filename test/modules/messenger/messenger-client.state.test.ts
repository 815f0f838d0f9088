import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerClient, MessengerError, UnauthorizedError, type MessengerClientOptions, type StateChange, type TokenContext } from '../../../packages/messenger-client/src/index.ts';
import { expiryOf } from '../../../packages/messenger-client/src/token.ts';
import { signToken } from '../../../src/platform/http/auth.ts';
import { insertReplicaUser, messengerApp, type MessengerApp } from './support/app.ts';
import { startTcpProxy } from '../../support/tcp-proxy.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The client's honest state against the real service: start() rejects with the server's code, the
 * state machine says what the connection is doing, a refused token is refreshed through getToken
 * (on 401, before expiry, and on the live connection before the hub would close it), and the reconnect loop
 * stops on a refusal retrying cannot fix instead of retrying it in silence.
 */

const port = (m: MessengerApp) => (m.app.server.address() as { port: number }).port;

function client(p: number, extra: Partial<MessengerClientOptions>) {
  const states: StateChange[] = [];
  const errors: MessengerError[] = [];
  const negotiations: number[] = [];
  const c = new MessengerClient({
    baseUrl: `http://127.0.0.1:${p}`,
    backoff: { minMs: 20, baseMs: 50, capMs: 100 },
    onStateChanged: (s) => states.push(s),
    onError: (e) => errors.push(e),
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (String(input).includes('/negotiate')) negotiations.push(res.status);
      return res;
    },
    ...extra,
  });
  after(() => c.stop());
  return { c, states, errors, negotiations, path: () => states.map((s) => s.state) };
}

const rejection = (p: Promise<unknown>) => p.then(() => assert.fail('start() resolved'), (e: unknown) => e as MessengerError);
/** Long enough for several of the test's reconnect delays (at most 100 ms each) to have passed. */
const severalRetries = () => new Promise((r) => setTimeout(r, 600));

async function tokenFor(m: MessengerApp, userId: string, opts: { secret?: string; expiresAtSec?: number } = {}) {
  const { JWT_SECRET, AUTH_ISSUER, AUTH_AUDIENCE } = m.config;
  return signToken({ userId, admin: false }, opts.secret ?? JWT_SECRET, { issuer: AUTH_ISSUER, audience: AUTH_AUDIENCE, ...(opts.expiresAtSec ? { expiresIn: opts.expiresAtSec } : {}) });
}

describe('client library: honest connection state', () => {
  test('a forged token: start() rejects with 401 AUTH_INVALID_TOKEN, the client ends disconnected and does not retry', async () => {
    const m = await messengerApp();
    const u = await m.user();
    const forged = await tokenFor(m, u.id, { secret: 'not-the-service-secret-not-the-service-secret' });
    const a = client(port(m), { token: forged });
    const err = await rejection(a.c.start());
    assert.ok(err instanceof MessengerError);
    assert.deepEqual([err.code, err.status, err.retryable], ['AUTH_INVALID_TOKEN', 401, false]);
    assert.equal(a.c.state, 'disconnected');
    assert.deepEqual(a.path(), ['connecting', 'disconnected']);
    assert.equal(a.states.at(-1)!.error?.code, 'AUTH_INVALID_TOKEN');
    assert.deepEqual(a.errors.map((e) => e.code), ['AUTH_INVALID_TOKEN']);
    await severalRetries();
    assert.deepEqual(a.negotiations, [401], 'asked once, never again');
  });

  test('a deactivated user: start() rejects with 403 MSG_USER_INACTIVE and the client stops', async () => {
    const m = await messengerApp();
    const inactive = await insertReplicaUser(m.pool, { active: false });
    const a = client(port(m), { token: await tokenFor(m, inactive.id) });
    const err = await rejection(a.c.start());
    assert.deepEqual([err.code, err.status], ['MSG_USER_INACTIVE', 403]);
    await severalRetries();
    assert.deepEqual([a.c.state, a.negotiations], ['disconnected', [403]]);
  });

  test('deactivated while connected: after the connection drops, the reconnect meets 403 MSG_USER_INACTIVE and stops', async () => {
    const m = await messengerApp();
    const u = await m.user();
    const proxy = await startTcpProxy(port(m));
    const a = client(proxy.port, { token: u.token });
    await a.c.start();
    await m.pool.query(`update messenger.users set is_active = false where id = $1`, [u.id]);
    proxy.cut();
    await waitFor('stopped', () => a.c.state === 'disconnected', 15_000);
    assert.deepEqual(a.path(), ['connecting', 'connected', 'reconnecting', 'disconnected']);
    assert.equal(a.states.at(-1)!.error?.code, 'MSG_USER_INACTIVE');
    await severalRetries();
    assert.deepEqual(a.negotiations, [200, 403], 'no attempt after the refusal');
  });

  test('an unreachable server: start() rejects with NETWORK_ERROR, the client keeps trying and connects once it is back', async () => {
    const m = await messengerApp();
    const u = await m.user();
    const proxy = await startTcpProxy(port(m));
    proxy.block();
    const a = client(proxy.port, { token: u.token });
    const err = await rejection(a.c.start());
    assert.deepEqual([err.code, err.status, err.retryable], ['NETWORK_ERROR', 0, true]);
    assert.equal(a.c.state, 'connecting', 'still trying');
    proxy.unblock();
    await waitFor('connected', () => a.c.state === 'connected', 15_000);
    assert.deepEqual(a.path(), ['connecting', 'connected']);
  });

  test('a token refused with 401 is replaced through getToken({ reason: "rejected" }) and the connect goes through', async () => {
    const m = await messengerApp();
    const u = await m.user();
    const asked: TokenContext[] = [];
    const a = client(port(m), {
      token: await tokenFor(m, u.id, { secret: 'a-revoked-signing-key-a-revoked-signing-key' }),
      getToken: async (ctx) => (asked.push(ctx), u.token),
    });
    await a.c.start();
    assert.equal(a.c.state, 'connected');
    assert.deepEqual(asked, [{ reason: 'rejected' }]);
    assert.deepEqual(a.negotiations, [401, 200]);
  });

  test('a JWT about to expire is replaced before it is sent (reason "expiring"): no 401 on the way', async () => {
    const m = await messengerApp();
    const u = await m.user();
    const asked: TokenContext[] = [];
    const soon = await tokenFor(m, u.id, { expiresAtSec: Math.floor(Date.now() / 1000) + 10 });
    const a = client(port(m), { token: soon, getToken: async (ctx) => (asked.push(ctx), u.token) });
    await a.c.start();
    assert.deepEqual(asked, [{ reason: 'expiring' }]);
    assert.deepEqual(a.negotiations, [200]);
  });

  test('a token about to expire is renewed on the live connection: a second connection replaces the first before the hub would close it, the state never leaves connected, and a message pushed meanwhile arrives once', async () => {
    const m = await messengerApp();
    const [u, peer] = [await m.user(), await m.user()];
    const chat = (await m.call<{ id: string }>(peer.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [u.id] })).body;
    const short = await tokenFor(m, u.id, { expiresAtSec: Math.floor(Date.now() / 1000) + 5 });
    const asked: TokenContext[] = [];
    let negotiates = 0;
    const a = client(port(m), {
      token: short,
      refreshBeforeExpiryMs: 2500,
      getToken: async (ctx) => (asked.push(ctx), u.token),
      // The rollover's negotiate: a message is sent and pushed while both connections are open, so
      // it reaches the old one live and the new one again through its resume.
      fetch: async (input, init) => {
        if (String(input).includes('/negotiate') && ++negotiates === 2) {
          await m.call(peer.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'during the rollover' });
          await m.dispatch();
        }
        return fetch(input, init);
      },
    });
    const bodies: (string | null | undefined)[] = [];
    a.c.on('message', (msg) => bodies.push(msg.body));
    a.c.trackChat(chat.id, 0);
    await a.c.start();
    const first = a.c.connection;
    await waitFor('rolled over', () => a.c.connection !== first, 15_000);
    await a.c.settled();
    // Past the old token's exp and the hub's next expiry check: the old connection was closed by the client, not the hub.
    await new Promise((r) => setTimeout(r, Math.max(0, (expiryOf(short)! - Date.now()) + 1000)));
    assert.deepEqual(a.path(), ['connecting', 'connected'], 'no reconnecting in between');
    assert.equal(a.c.state, 'connected');
    assert.equal(first.state, 'Disconnected');
    assert.deepEqual(asked, [{ reason: 'expiring' }]);
    assert.deepEqual(bodies, ['during the rollover'], 'once');
  });

  test('setToken: REST uses the new token at once and the live connection moves onto it, without a state change', async () => {
    const m = await messengerApp();
    const u = await m.user();
    const sentWith: string[] = [];
    const negotiated: string[] = [];
    const a = client(port(m), {
      token: await tokenFor(m, u.id, { expiresAtSec: Math.floor(Date.now() / 1000) + 600 }),
      fetch: async (input, init) => {
        const bearer = new Headers(init?.headers).get('authorization') ?? '';
        if (String(input).includes('/api/messenger/chats?')) sentWith.push(bearer);
        if (String(input).includes('/negotiate')) negotiated.push(bearer);
        return fetch(input, init);
      },
    });
    await a.c.start();
    const first = a.c.connection;
    const next = await tokenFor(m, u.id, { expiresAtSec: Math.floor(Date.now() / 1000) + 900 });
    a.c.setToken(next);
    await a.c.chatList();
    assert.deepEqual(sentWith, [`Bearer ${next}`]);
    await waitFor('moved onto the new token', () => a.c.connection !== first && first.state === 'Disconnected', 15_000);
    assert.deepEqual([a.c.state, a.path()], ['connected', ['connecting', 'connected']]);
    assert.equal(negotiated.at(-1), `Bearer ${next}`, 'the new connection was opened with the new token');
  });

  test('getToken throwing UnauthorizedError after a 401 stops the client with the server\'s code', async () => {
    const m = await messengerApp();
    const u = await m.user();
    const a = client(port(m), {
      token: await tokenFor(m, u.id, { secret: 'a-revoked-signing-key-a-revoked-signing-key' }),
      getToken: async () => {
        throw new UnauthorizedError('signed out');
      },
    });
    const err = await rejection(a.c.start());
    assert.deepEqual([err.code, err.status], ['AUTH_INVALID_TOKEN', 401]);
    assert.match(err.message, /signed out/);
    await severalRetries();
    assert.deepEqual([a.c.state, a.negotiations], ['disconnected', [401]]);
  });

  test('REST failures are MessengerErrors with the server\'s code, message, status and Retry-After', async () => {
    const m = await messengerApp({}, { rateLimitChatChangesPerMinute: 1 });
    const [alice, bob] = [await m.user(), await m.user()];
    const a = client(port(m), { token: alice.token });
    const missing = await a.c.markRead('00000000-0000-4000-8000-000000000000', 1).then(() => undefined, (e: MessengerError) => e);
    assert.ok(missing instanceof MessengerError);
    assert.deepEqual([missing.code, missing.status, missing.retryable], ['MSG_CHAT_NOT_FOUND', 404, false]);
    assert.ok(missing.message.length > 0);
    await a.c.createChat({ kind: 'Group', title: 'one', memberUserIds: [bob.id] });
    const limited = await a.c.createChat({ kind: 'Group', title: 'two', memberUserIds: [bob.id] }).then(() => undefined, (e: MessengerError) => e);
    assert.deepEqual([limited?.status, limited?.retryable], [429, true]);
    assert.ok((limited?.retryAfterMs ?? 0) > 0, 'Retry-After read');
  });
});
