import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { loadConfig } from '../../../src/config.ts';
import { buildTestApp } from '../../support/app.ts';

const portOf = (server: { address(): unknown }) => (server.address() as AddressInfo).port;

test('METRICS_PORT set: /metrics and /health/* answer on that port and 404 { code, message } on the main one', async () => {
  const { app } = await buildTestApp({ METRICS_PORT: '0', HOST: '127.0.0.1' });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const main = `http://127.0.0.1:${portOf(app.server)}`;
  assert.ok(app.platform.ops, 'a separate ops listener exists');
  const ops = `http://127.0.0.1:${portOf(app.platform.ops.server)}`;
  assert.notEqual(ops, main);

  const scrape = await fetch(`${ops}/metrics`);
  assert.equal(scrape.status, 200);
  assert.match(scrape.headers.get('content-type') ?? '', /^text\/plain/);
  const body = await scrape.text();
  // The ops listener serves the app's own registry, not a fresh one.
  const registered = (await app.platform.registry.getMetricsAsJSON()).map((m) => m.name);
  assert.ok(registered.length > 0);
  for (const name of registered) assert.match(body, new RegExp(`^# TYPE ${name} `, 'm'), name);
  assert.deepEqual(await (await fetch(`${ops}/health/live`)).json(), { status: 'ok' });
  const ready = await fetch(`${ops}/health/ready`);
  assert.equal(ready.status, 200);
  assert.equal(((await ready.json()) as { status: string }).status, 'ready');

  for (const path of ['/metrics', '/health/live', '/health/ready']) {
    const res = await fetch(`${main}${path}`);
    assert.equal(res.status, 404, path);
    const err = (await res.json()) as { code: string; message: string };
    assert.equal(err.code, 'ROUTE_NOT_FOUND', path);
    assert.equal(typeof err.message, 'string');
  }
  // The service's own routes stay on the main port only.
  assert.equal((await fetch(`${main}/docs/json`)).status, 200);
  assert.equal((await fetch(`${ops}/docs/json`)).status, 404);
});

test('METRICS_PORT unset: /metrics and /health/* stay on the main port, with no second listener', async () => {
  const { app } = await buildTestApp();
  assert.equal(app.platform.ops, undefined);
  assert.equal((await app.inject('/metrics')).statusCode, 200);
  assert.equal((await app.inject('/health/live')).statusCode, 200);
});

test('METRICS_PORT already taken: start-up fails instead of running without its ops surface', async () => {
  const blocker = createServer();
  blocker.listen(0, '127.0.0.1');
  await once(blocker, 'listening');
  try {
    const { app } = await buildTestApp({ METRICS_PORT: String(portOf(blocker)), HOST: '127.0.0.1' });
    await assert.rejects(app.listen({ host: '127.0.0.1', port: 0 }), /EADDRINUSE/);
  } finally {
    blocker.close();
  }
});

test('METRICS_PORT must differ from PORT', () => {
  assert.throws(() => loadConfig({ METRICS_PORT: '3000', PORT: '3000' }), /METRICS_PORT: must differ from PORT/);
  assert.equal(loadConfig({ METRICS_PORT: '9464' }).METRICS_PORT, 9464);
});

const SCRAPE_SECRET = 'scrape-secret-for-tests-0123456789abcdef';

test('METRICS_SCRAPE_SECRET set with /metrics on PORT: 401 { code, message } without it or with another, 200 with it; /health/* stays open', async () => {
  const { app } = await buildTestApp({ METRICS_SCRAPE_SECRET: SCRAPE_SECRET });
  const refusals = [
    [{}, 'AUTH_REQUIRED'],
    [{ authorization: `Bearer ${SCRAPE_SECRET}x` }, 'AUTH_INVALID_CREDENTIAL'],
    [{ authorization: `Bearer ${SCRAPE_SECRET.slice(0, -1)}` }, 'AUTH_INVALID_CREDENTIAL'],
    [{ authorization: SCRAPE_SECRET }, 'AUTH_REQUIRED'],
  ] as const;
  for (const [headers, code] of refusals) {
    const res = await app.inject({ url: '/metrics', headers });
    assert.equal(res.statusCode, 401, JSON.stringify(headers));
    assert.equal(res.json().code, code);
    assert.equal(typeof res.json().message, 'string');
    assert.doesNotMatch(res.body, /job_runs_total|# TYPE/, 'no metric leaks in a refusal');
  }
  const scrape = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${SCRAPE_SECRET}` } });
  assert.equal(scrape.statusCode, 200);
  assert.match(scrape.body, /^# TYPE health_dependency_up gauge$/m);
  // Probes from load balancers and orchestrators carry no credentials.
  assert.equal((await app.inject('/health/live')).statusCode, 200);
  assert.equal((await app.inject('/health/ready')).statusCode, 200);
});

test('METRICS_SCRAPE_SECRET set with METRICS_PORT: the separate listener asks for it too', async () => {
  const { app } = await buildTestApp({ METRICS_PORT: '0', HOST: '127.0.0.1', METRICS_SCRAPE_SECRET: SCRAPE_SECRET });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const ops = `http://127.0.0.1:${portOf(app.platform.ops!.server)}`;
  const refused = await fetch(`${ops}/metrics`);
  assert.equal(refused.status, 401);
  assert.equal(((await refused.json()) as { code: string }).code, 'AUTH_REQUIRED');
  assert.equal((await fetch(`${ops}/metrics`, { headers: { authorization: `Bearer ${SCRAPE_SECRET}` } })).status, 200);
  assert.equal((await fetch(`${ops}/health/live`)).status, 200);
});

test('METRICS_SCRAPE_SECRET is a secret: shorter than 32 characters is refused, and its value is never echoed', () => {
  assert.throws(() => loadConfig({ METRICS_SCRAPE_SECRET: 'too-short-secret' }), (e: Error) => /METRICS_SCRAPE_SECRET/.test(e.message) && !e.message.includes('too-short-secret'));
});
