import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { WebSocket } from 'ws';
import { loadConfig } from '../../../src/config.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { createHubFromConfig, hubPlugin, REALTIME_DEFAULTS } from '../../../src/platform/realtime/index.ts';
import { RECORD_SEPARATOR as RS } from '../../../src/platform/realtime/protocol.ts';
import { configProblems } from '../../support/config.ts';
import { connectClient, newUserId, startHubApp, TEST_SECRET, tokenFor } from '../../support/signalr.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The hub's front door (src/platform/realtime/handshake.ts): an upgraded socket becomes a connection
 * only with a valid handshake request. Until then it holds no place in its user's connection cap;
 * one that sends a malformed request, or none within HUB_HANDSHAKE_TIMEOUT, gets a handshake error
 * and is closed, as ASP.NET Core does; a refused one is answered, never dropped silently.
 */

interface Silent {
  ws: WebSocket;
  /** Every WebSocket message received, as text. */
  answers: string[];
  /** The close code once closed (1006: dropped without a close frame). */
  closeCode(): number | undefined;
  /** Sends its handshake request; resolves with the next answer. */
  handshake(): Promise<string>;
}

/** A raw socket that upgrades and sends nothing until told. */
async function upgradeOnly(wsUrl: string, userId: string): Promise<Silent> {
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${await tokenFor(userId)}` } });
  ws.on('error', () => {});
  const answers: string[] = [];
  let code: number | undefined;
  ws.on('message', (data) => answers.push(data.toString()));
  ws.once('close', (c) => (code = c));
  await new Promise((resolve) => ws.once('open', resolve));
  return {
    ws,
    answers,
    closeCode: () => code,
    async handshake() {
      const seen = answers.length;
      ws.send(`{"protocol":"json","version":1}${RS}`);
      await waitFor('the handshake answer', () => answers.length > seen);
      return answers[seen]!;
    },
  };
}

const handshakeError = (error: string) => `${JSON.stringify({ error })}${RS}`;

describe('hub front door: the handshake timeout', () => {
  test('a socket that sends no handshake request within the timeout gets "Handshake was canceled." and a close, counted as handshake_timeout', async () => {
    const { hub, wsUrl, registry } = await startHubApp({ handshakeTimeoutMs: 200 });
    const silent = await upgradeOnly(wsUrl, newUserId());
    await waitFor('the socket to be closed', () => silent.closeCode() !== undefined);
    assert.deepEqual(silent.answers, [handshakeError('Handshake was canceled.')]);
    assert.equal(silent.closeCode(), 1000, 'a WebSocket close, not a dropped connection');
    assert.equal(await metricValue(registry, 'hub_disconnects_total', { reason: 'handshake_timeout' }), 1);
    assert.equal(await metricValue(registry, 'hub_handshakes_pending'), 0);
    assert.equal(hub.connectionCount(), 0);
  });

  test('a peer trickling an endless handshake request is cut off at the timeout, although bytes keep arriving', async () => {
    // The client timeout would never fire: it counts from the last byte received.
    const { wsUrl } = await startHubApp({ handshakeTimeoutMs: 300, clientTimeoutMs: 60_000 });
    const trickler = await upgradeOnly(wsUrl, newUserId());
    const trickle = setInterval(() => trickler.ws.readyState === WebSocket.OPEN && trickler.ws.send(' '), 20);
    try {
      await waitFor('the socket to be closed', () => trickler.closeCode() !== undefined);
    } finally {
      clearInterval(trickle);
    }
    assert.deepEqual(trickler.answers, [handshakeError('Handshake was canceled.')]);
  });

  test('a handshake request within the timeout opens the connection, which the timeout then leaves alone', async () => {
    const { hub, wsUrl, registry } = await startHubApp({ handshakeTimeoutMs: 200, pingIntervalMs: 50, clientTimeoutMs: 60_000 });
    const client = await upgradeOnly(wsUrl, newUserId());
    assert.equal(await client.handshake(), `{}${RS}`);
    // Pings come every 50 ms: four of them span twice the handshake timeout.
    await waitFor('four pings', () => client.answers.filter((a) => a === `{"type":6}${RS}`).length >= 4);
    assert.equal(client.closeCode(), undefined);
    assert.equal(hub.connectionCount(), 1);
    assert.equal(await metricValue(registry, 'hub_disconnects_total', { reason: 'handshake_timeout' }), 0);
  });
});

describe('hub front door: malformed handshakes', () => {
  test('a lone record separator gets a handshake error and the socket is closed', async () => {
    const { wsUrl, registry } = await startHubApp();
    const socket = await upgradeOnly(wsUrl, newUserId());
    socket.ws.send(RS);
    await waitFor('the socket to be closed', () => socket.closeCode() !== undefined);
    assert.deepEqual(socket.answers, [
      handshakeError('An unexpected error occurred during connection handshake. InvalidDataException: The handshake request is empty.'),
    ]);
    assert.equal(await metricValue(registry, 'hub_disconnects_total', { reason: 'handshake_failed' }), 1);
  });
});

describe('hub front door: caps', () => {
  test('a socket that has not sent its handshake request holds no place in its user\'s cap; at its request the cap applies', async () => {
    const { url, wsUrl, registry } = await startHubApp({ maxConnectionsPerUser: 2, handshakeTimeoutMs: 60_000 });
    const userId = newUserId();
    const stuck = await upgradeOnly(wsUrl, userId);
    const clients = [await connectClient(url, await tokenFor(userId)), await connectClient(url, await tokenFor(userId))];
    assert.deepEqual(clients.map((c) => c.connection.state), ['Connected', 'Connected'], 'the stuck socket took no place');
    await assert.rejects(connectClient(url, await tokenFor(userId)), /Too many connections: a user may hold at most 2 on this server/);

    assert.equal(await stuck.handshake(), handshakeError('Too many connections: a user may hold at most 2 on this server; close another one first.'));
    await waitFor('the refused socket to be closed', () => stuck.closeCode() !== undefined);
    assert.equal(stuck.closeCode(), 1000);
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'user_limit' }), 2);
    assert.equal(await metricValue(registry, 'hub_connections_active'), 2, 'refused sockets never count as connections');
    assert.deepEqual(clients.map((c) => c.connection.state), ['Connected', 'Connected']);
  });

  test('one user may have as many sockets waiting for their handshake as the cap; past it the next is refused, other users are not', async () => {
    const { wsUrl, registry } = await startHubApp({ maxConnectionsPerUser: 2, handshakeTimeoutMs: 60_000 });
    const userId = newUserId();
    const waiting = [await upgradeOnly(wsUrl, userId), await upgradeOnly(wsUrl, userId)];
    const third = await upgradeOnly(wsUrl, userId);
    assert.equal(
      await third.handshake(),
      handshakeError('Too many connections: a user may have at most 2 handshakes in progress on this server; try again later.'),
    );
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'handshake_limit' }), 1);
    const other = await upgradeOnly(wsUrl, newUserId());
    assert.equal(await other.handshake(), `{}${RS}`);
    for (const socket of waiting) assert.equal(await socket.handshake(), `{}${RS}`, 'the waiting ones open when they ask');
  });

  test('a socket refused by a cap that never sends its handshake gets the refusal and a WebSocket close, not a silent drop', async () => {
    const { url, wsUrl, registry } = await startHubApp({ maxConnections: 1, handshakeTimeoutMs: 200 });
    await connectClient(url, await tokenFor(newUserId()));
    const refused = await upgradeOnly(wsUrl, newUserId());
    await waitFor('the refused socket to be closed', () => refused.closeCode() !== undefined);
    assert.deepEqual(refused.answers, [handshakeError('Too many connections: this server holds its maximum of 1; try again later.')]);
    assert.equal(refused.closeCode(), 1000);
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'replica_limit' }), 1);
  });
});

describe('hub front door: shutdown', () => {
  test('a socket still waiting for its handshake when the hub closes gets "Server is shutting down." as its handshake error', async () => {
    const { hub, wsUrl } = await startHubApp({ handshakeTimeoutMs: 60_000 });
    const waiting = await upgradeOnly(wsUrl, newUserId());
    await hub.close();
    await waitFor('the socket to be closed', () => waiting.closeCode() !== undefined);
    assert.deepEqual(waiting.answers, [handshakeError('Server is shutting down.')]);
  });
});

describe('the handshake timeout (fixed: REALTIME_DEFAULTS.hubHandshakeTimeoutMs, once HUB_HANDSHAKE_TIMEOUT)', () => {
  test('15 s by default, as ASP.NET Core\'s HubOptions.HandshakeTimeout; the retired setting fails start-up naming the constant', () => {
    assert.equal(REALTIME_DEFAULTS.hubHandshakeTimeoutMs, 15_000);
    assert.match(configProblems({ HUB_HANDSHAKE_TIMEOUT: '2s' }).join('\n'), /^HUB_HANDSHAKE_TIMEOUT: removed — it is now a fixed constant \(REALTIME_DEFAULTS\.hubHandshakeTimeoutMs = 15s/);
  });

  test('the hub built from the settings cancels a silent socket\'s handshake after it (shortened in code)', async () => {
    const config = { ...loadConfig({}), JWT_SECRET: TEST_SECRET };
    const hub = await createHubFromConfig(config, { registry: new Registry(), logger: createLogger('silent') }, { ...REALTIME_DEFAULTS, hubHandshakeTimeoutMs: 1000 });
    const app = Fastify({ logger: false });
    await app.register(hubPlugin, { hub });
    await app.listen({ host: '127.0.0.1', port: 0 });
    after(() => app.close());
    const { port } = app.server.address() as { port: number };
    const silent = await upgradeOnly(`ws://127.0.0.1:${port}/hubs/messenger`, newUserId());
    // Well before the 15 s default would cancel it.
    await waitFor('the socket to be closed', () => silent.closeCode() !== undefined, 10_000);
    assert.deepEqual(silent.answers, [handshakeError('Handshake was canceled.')]);
  });
});
