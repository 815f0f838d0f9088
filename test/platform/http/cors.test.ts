import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config.ts';
import { CORS_ALLOWED_HEADERS } from '../../../src/platform/http/cors.ts';
import { corsOriginsOf } from '../../../src/platform/http/settings.ts';
import { buildTestApp } from '../../support/app.ts';
import { configProblems } from '../../support/config.ts';
import { logCapture } from '../../support/logs.ts';

/**
 * The preflight answers, fast (app.inject); what a real browser does with them is
 * cors.browser.test.ts.
 */

const ALLOWED = 'https://app.example.com';
const OTHER = 'https://evil.example.net';
const corsHeadersOf = (headers: Record<string, unknown>) => Object.keys(headers).filter((h) => h.startsWith('access-control-'));

const preflight = (origin: string, url: string, method: string, requestHeaders: string) => ({
  method: 'OPTIONS' as const,
  url,
  headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': requestHeaders },
});

test('an allowed origin: the API preflight answers 204 with its methods, headers, credentials and max-age', async () => {
  const { app } = await buildTestApp({ CORS_ALLOWED_ORIGINS: `http://localhost:5173, ${ALLOWED}` });
  const res = await app.inject(preflight(ALLOWED, '/api/messenger/chats', 'GET', 'authorization'));
  assert.equal(res.statusCode, 204);
  assert.equal(res.headers['access-control-allow-origin'], ALLOWED);
  assert.equal(res.headers['access-control-allow-credentials'], 'true');
  assert.deepEqual(String(res.headers['access-control-allow-methods']).split(', '), ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);
  assert.deepEqual(String(res.headers['access-control-allow-headers']).split(', '), [...CORS_ALLOWED_HEADERS]);
  assert.equal(res.headers['access-control-max-age'], '600');
  assert.match(String(res.headers.vary), /Origin/, 'a cache must not serve one origin the answer of another');
  assert.equal(res.body, '');
});

test("an allowed origin: the hub's negotiate preflight allows the headers @microsoft/signalr sends", async () => {
  const { app } = await buildTestApp({ CORS_ALLOWED_ORIGINS: ALLOWED });
  const res = await app.inject(preflight(ALLOWED, '/hubs/messenger/negotiate?negotiateVersion=1', 'POST', 'authorization,x-requested-with,x-signalr-user-agent'));
  assert.equal(res.statusCode, 204);
  assert.equal(res.headers['access-control-allow-origin'], ALLOWED);
  assert.equal(res.headers['access-control-allow-credentials'], 'true');
  const allowed = String(res.headers['access-control-allow-headers']).toLowerCase().split(', ');
  for (const h of ['authorization', 'x-requested-with', 'x-signalr-user-agent']) assert.ok(allowed.includes(h), h);
  assert.match(String(res.headers['access-control-allow-methods']), /\bPOST\b/);
});

test('an allowed origin: answers carry Allow-Origin, so a web app reads the { code, message } of a refusal and its Retry-After', async () => {
  const { app } = await buildTestApp({ CORS_ALLOWED_ORIGINS: ALLOWED });
  const res = await app.inject({ method: 'GET', url: '/api/messenger/chats', headers: { origin: ALLOWED } });
  assert.equal(res.statusCode, 401);
  assert.equal(res.json().code, 'AUTH_REQUIRED');
  assert.equal(res.headers['access-control-allow-origin'], ALLOWED);
  assert.equal(res.headers['access-control-expose-headers'], 'Retry-After');
});

test('an origin not in the list: its preflight is the 404 { code, message } of an unknown route, with no CORS header', async () => {
  const { app } = await buildTestApp({ CORS_ALLOWED_ORIGINS: ALLOWED });
  for (const origin of [OTHER, `${ALLOWED}.evil.net`, 'http://app.example.com', 'null']) {
    const res = await app.inject(preflight(origin, '/api/messenger/chats', 'GET', 'authorization'));
    assert.equal(res.statusCode, 404, origin);
    assert.equal(res.json().code, 'ROUTE_NOT_FOUND', origin);
    assert.equal(typeof res.json().message, 'string');
    assert.deepEqual(corsHeadersOf(res.headers), [], origin);
  }
  const plain = await app.inject({ method: 'GET', url: '/api/messenger/chats', headers: { origin: OTHER } });
  assert.deepEqual(corsHeadersOf(plain.headers), [], 'no Allow-Origin: the browser keeps the answer from the page');
});

test('an allowed origin sending OPTIONS without a request method: 204, never a text/plain 400', async () => {
  const { app } = await buildTestApp({ CORS_ALLOWED_ORIGINS: ALLOWED });
  const res = await app.inject({ method: 'OPTIONS', url: '/api/messenger/chats', headers: { origin: ALLOWED } });
  assert.equal(res.statusCode, 204);
});

test('CORS_ALLOWED_ORIGINS unset (the default): same-origin only, OPTIONS answers 404 and no answer carries a CORS header', async () => {
  const { app } = await buildTestApp();
  const res = await app.inject(preflight(ALLOWED, '/api/messenger/chats', 'GET', 'authorization'));
  assert.equal(res.statusCode, 404);
  assert.equal(res.json().code, 'ROUTE_NOT_FOUND');
  assert.deepEqual(corsHeadersOf(res.headers), []);
  const get = await app.inject({ method: 'GET', url: '/health/live', headers: { origin: ALLOWED } });
  assert.equal(get.statusCode, 200);
  assert.deepEqual(corsHeadersOf(get.headers), []);
});

test('CORS_ALLOWED_ORIGINS takes exact origins only: each entry that is not one is named', () => {
  assert.deepEqual(corsOriginsOf(loadConfig({ CORS_ALLOWED_ORIGINS: ` ${ALLOWED} , http://127.0.0.1:8080` })), [ALLOWED, 'http://127.0.0.1:8080']);
  const bad = ['*', 'https://*.example.com', 'app.example.com', 'https://app.example.com/', 'https://app.example.com/path', 'ftp://app.example.com', 'https://App.example.com', 'https://app.example.com:443', 'null'];
  const problems = configProblems({ CORS_ALLOWED_ORIGINS: [ALLOWED, ...bad].join(',') });
  assert.equal(problems.length, 1, problems.join('\n'));
  assert.match(problems[0]!, /^CORS_ALLOWED_ORIGINS: not an exact origin/);
  const named = problems[0]!.slice(problems[0]!.lastIndexOf('): ') + 3).split(', ');
  assert.deepEqual(named, bad);
});

test('start-up warns about a plain http:// origin on another machine, naming it, and not about this machine\'s', async () => {
  const lan = logCapture('warn');
  await buildTestApp({ CORS_ALLOWED_ORIGINS: `http://192.168.1.20:5173, http://localhost:5173, ${ALLOWED}` }, { logDestination: lan.stream });
  const warned = lan.lines().filter((l) => String(l.msg).startsWith('CORS_ALLOWED_ORIGINS lists plain http://'));
  assert.equal(warned.length, 1);
  assert.deepEqual(warned[0]!.origins, ['http://192.168.1.20:5173']);

  const local = logCapture('warn');
  await buildTestApp({ CORS_ALLOWED_ORIGINS: `http://localhost:5173, http://127.0.0.1:8080, http://[::1]:3000, ${ALLOWED}` }, { logDestination: local.stream });
  assert.equal(local.lines().filter((l) => String(l.msg).includes('plain http://')).length, 0);
});
