import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import { WebSocket } from 'ws';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { createHub } from '../../../src/platform/realtime/hub.ts';
import { hubPlugin } from '../../../src/platform/realtime/plugin.ts';
import { ManualClock } from '../../../src/platform/time.ts';
import { RECORD_SEPARATOR as RS } from '../../../src/platform/realtime/protocol.ts';
import { newUserId, startHubApp, TEST_SECRET, tokenFor } from '../../support/signalr.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * A negotiate's connection token opens at most one socket: a second upgrade with it — while the
 * first socket is open, still handshaking, or racing it — is refused before the upgrade, so no
 * socket escapes the hub's bookkeeping (and with it the close at its JWT's expiry). The token
 * lives for seconds, which bounds reuse across replicas, where this replica's memory does not reach.
 */

/** Opens a WebSocket; resolves with 101 and the open socket, or with the refusal's HTTP status. */
function upgrade(url: string): Promise<{ status: number; ws: WebSocket }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('error', () => {});
    ws.once('unexpected-response', (_req, res) => resolve({ status: res.statusCode ?? 0, ws }));
    ws.once('open', () => resolve({ status: 101, ws }));
  });
}

async function negotiate(url: string, jwt: string): Promise<string> {
  const res = await fetch(`${url}/negotiate?negotiateVersion=1`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } });
  assert.equal(res.status, 200);
  return ((await res.json()) as { connectionToken: string }).connectionToken;
}

/**
 * The hub behind an app with an asynchronous step between the hub's admission of an upgrade and the
 * socket's attach (as an access check at connect, or an instrumentation's hook, would be): the window
 * in which a check made at attach time lets a racing second upgrade through.
 */
async function hubAppWithAsyncStep() {
  const hub = createHub({ secret: TEST_SECRET, registry: new Registry(), logger: createLogger('silent') });
  const app = Fastify({ logger: false });
  app.addHook('preHandler', async () => {
    await sleep(20);
  });
  await app.register(hubPlugin, { hub });
  await app.listen({ host: '127.0.0.1', port: 0 });
  after(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  return { hub, url: `http://127.0.0.1:${port}/hubs/messenger`, wsUrl: `ws://127.0.0.1:${port}/hubs/messenger` };
}

test('two concurrent upgrades with one connection token: exactly one socket opens, every time', async () => {
  const { hub, url, wsUrl } = await hubAppWithAsyncStep();
  const jwt = await tokenFor(newUserId());
  for (let round = 0; round < 20; round++) {
    const token = await negotiate(url, jwt);
    const target = `${wsUrl}?id=${encodeURIComponent(token)}&access_token=${jwt}`;
    const both = await Promise.all([upgrade(target), upgrade(target)]);
    assert.deepEqual(both.map((b) => b.status).sort(), [101, 404], `round ${round}`);
    for (const { ws } of both) ws.terminate();
  }
  await waitFor('every socket closed', () => hub.connectionCount() === 0);
});

test('a token whose socket is still handshaking, or open, or closed again opens no second socket', async () => {
  const { hub, url, wsUrl } = await startHubApp();
  const jwt = await tokenFor(newUserId());
  const token = await negotiate(url, jwt);
  const target = `${wsUrl}?id=${encodeURIComponent(token)}&access_token=${jwt}`;

  const first = await upgrade(target);
  assert.equal(first.status, 101);
  assert.equal((await upgrade(target)).status, 404, 'first socket upgraded, no handshake yet');
  const handshake = new Promise((resolve) => first.ws.once('message', resolve));
  first.ws.send(`{"protocol":"json","version":1}${RS}`);
  await handshake;
  const refused = await upgrade(target);
  assert.equal(refused.status, 404, 'first socket open');
  assert.equal(refused.ws.readyState === WebSocket.OPEN, false);

  first.ws.close();
  await waitFor('the first socket gone', () => hub.connectionCount() === 0);
  assert.equal((await upgrade(target)).status, 404, 'a used token stays used: the client negotiates again');
  const fresh = await upgrade(`${wsUrl}?id=${encodeURIComponent(await negotiate(url, jwt))}&access_token=${jwt}`);
  assert.equal(fresh.status, 101, 'a new negotiate opens a new socket');
  fresh.ws.terminate();
});

test('a connection token expires within seconds of its negotiate', async () => {
  const clock = new ManualClock(new Date());
  const { url, wsUrl } = await startHubApp({ clock });
  const jwt = await tokenFor(newUserId());
  const token = await negotiate(url, jwt);
  clock.advance(15_001);
  const late = await upgrade(`${wsUrl}?id=${encodeURIComponent(token)}&access_token=${jwt}`);
  assert.equal(late.status, 404);
  const onTime = await negotiate(url, jwt);
  clock.advance(5_000);
  const opened = await upgrade(`${wsUrl}?id=${encodeURIComponent(onTime)}&access_token=${jwt}`);
  assert.equal(opened.status, 101);
  opened.ws.terminate();
});
