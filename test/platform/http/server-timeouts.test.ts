import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { userGroup } from '../../../src/platform/realtime/index.ts';
import { newId } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';
import { connectClient } from '../../support/signalr.ts';
import { waitFor } from '../../support/wait.ts';

const { app, token } = await buildTestApp(
  { HTTP_KEEP_ALIVE_TIMEOUT: '5s' },
  { modules: [], tuning: { httpRequestTimeoutMs: 1000, httpConnectionTimeoutMs: 1500, hubPingIntervalMs: 200 } },
);
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.address() as net.AddressInfo;

/** A raw client that sends `bytes` and then nothing; resolves with what it got once the server closes. */
function trickle(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let got = '';
    socket.on('data', (d) => (got += d.toString()));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

test('a client that never finishes its request is answered 408 and disconnected (the request timeout)', async () => {
  const unfinishedHeaders = trickle('GET /health/live HTTP/1.1\r\nHost: x\r\n');
  const unfinishedBody = trickle('POST /health/live HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":');
  for (const got of await Promise.all([unfinishedHeaders, unfinishedBody])) assert.match(got, /^HTTP\/1\.1 408/);
});

test('the connection, request and keep-alive timeouts are the ones the app was built with', () => {
  assert.equal(app.server.timeout, 1500);
  assert.equal(app.server.keepAliveTimeout, 5000);
  assert.equal(app.server.requestTimeout, 1000);
});

test('a hub socket outlives the connection timeout: its pings keep it active', async () => {
  const userId = newId();
  const client = await connectClient(`http://127.0.0.1:${port}/hubs/messenger`, await token({ userId }), { events: ['probe'] });
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(client.closed, false);
  await app.platform.hub.send(userGroup(userId), 'probe', { ok: true });
  await waitFor('the push after the timeout', () => client.received.length === 1);
  await client.connection.stop();
});
