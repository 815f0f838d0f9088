import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { buildTestApp } from '../../support/app.ts';

/**
 * What Node's HTTP server refuses before Fastify routes a request answers in the API's one format,
 * `{ code, message }`: Fastify's default client-error answer was its own shape
 * (`{"error":"Request Header Fields Too Large","message":…,"statusCode":431}`).
 */

const { app } = await buildTestApp({}, { modules: [], tuning: { httpRequestTimeoutMs: 1000, httpConnectionTimeoutMs: 1500 } });
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.address() as net.AddressInfo;

/** Sends raw bytes and resolves with everything the server answered once it closes the connection. */
function raw(bytes: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let got = '';
    socket.on('data', (d) => (got += d.toString()));
    socket.on('close', () => {
      const [head = '', body = ''] = got.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), body: body ? JSON.parse(body) : undefined });
    });
    socket.on('error', reject);
  });
}

test('headers past the server limit are 431 REQUEST_HEADERS_TOO_LARGE as { code, message }', async () => {
  const res = await raw(`GET /api/events HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
  assert.equal(res.status, 431);
  assert.deepEqual(Object.keys(res.body as object).sort(), ['code', 'message']);
  assert.equal((res.body as { code: string }).code, 'REQUEST_HEADERS_TOO_LARGE');
});

test('a request that is not valid HTTP is 400 BAD_REQUEST as { code, message }', async () => {
  const res = await raw('HELLO\r\n\r\n');
  assert.equal(res.status, 400);
  assert.equal((res.body as { code: string }).code, 'BAD_REQUEST');
});

test('a request not received in time is 408 REQUEST_TIMEOUT as { code, message }', async () => {
  const res = await raw('GET /health/live HTTP/1.1\r\nHost: x\r\n');
  assert.equal(res.status, 408);
  assert.equal((res.body as { code: string }).code, 'REQUEST_TIMEOUT');
});
