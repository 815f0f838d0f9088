import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket } from 'ws';
import { signToken } from '../../../src/platform/http/auth.ts';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { redactSecrets } from '../../../src/platform/observability/redact.ts';
import { redactingExporter } from '../../../src/platform/observability/tracing-redact.ts';
import { RECORD_SEPARATOR } from '../../../src/platform/realtime/protocol.ts';
import { createTestDatabase } from '../../support/db.ts';
import { SECURE_SECRETS } from '../../support/secure-env.ts';
import { freePort, startService } from '../../support/service-process.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * No secret query parameter leaves the service: the deployed process (`node src/main.ts`) with
 * tracing on serves a browser SignalR client (JWT in `?access_token=`, connection token in `?id=`)
 * and a contact search (`?phone=`); an OTLP/HTTP receiver keeps every exported body as it came,
 * the process's stdout keeps every log line, and neither holds any of the values, raw or URL-encoded.
 */

/** An OTLP/HTTP JSON endpoint keeping each request body as text. */
async function otlpReceiver() {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, text: () => bodies.join('\n'), close: () => server.close() };
}

/** Every way the value can be written in a URL, a JSON body or a log line. */
const encodings = (value: string) => [...new Set([value, encodeURIComponent(value), encodeURIComponent(encodeURIComponent(value)), JSON.stringify(value).slice(1, -1)])];

function assertAbsent(text: string, values: Record<string, string>, where: string): void {
  for (const [what, value] of Object.entries(values)) {
    for (const form of encodings(value)) assert.equal(text.includes(form), false, `${what} (${form}) reached ${where}`);
  }
}

test('with tracing on, neither the exported spans nor the log lines carry a JWT, a hub connection token or a searched phone', async (t) => {
  const otlp = await otlpReceiver();
  t.after(() => otlp.close());
  const database = await createTestDatabase();
  const port = await freePort();
  const service = startService({
    DATABASE_URL: database.url,
    KAFKA_BROKERS: '',
    ALLOW_INSECURE_DEFAULTS: 'true', // the in-process bus on a real database
    PORT: String(port),
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  await waitFor('the service to listen', () => /Server listening/.test(service.log.text), 60_000).catch((err: Error) =>
    assert.fail(`${err.message}\n${service.log.text.slice(-3000)}`),
  );
  const base = `http://127.0.0.1:${port}`;
  const jwt = await signToken({ userId: randomUUID(), admin: false }, SECURE_SECRETS.JWT_SECRET);
  const phone = '+79991234567';
  const refreshToken = `refresh-${randomUUID()}`;
  const clientSecret = `client-${randomUUID()}`;

  // A browser SignalR client: negotiate and the WebSocket carry the JWT in the query string.
  const negotiate = await fetch(`${base}/hubs/messenger/negotiate?negotiateVersion=1&access_token=${encodeURIComponent(jwt)}`, { method: 'POST' });
  assert.equal(negotiate.status, 200);
  const { connectionToken } = (await negotiate.json()) as { connectionToken: string };
  const ws = new WebSocket(`ws://127.0.0.1:${port}/hubs/messenger?id=${encodeURIComponent(connectionToken)}&access_token=${encodeURIComponent(jwt)}`);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const handshake = new Promise((resolve) => ws.once('message', resolve));
  ws.send(`{"protocol":"json","version":1}${RECORD_SEPARATOR}`);
  await handshake;
  ws.close();

  // Contact search by phone (found or not, the phone is in the URL), and the same URL on a route that does not exist.
  const search = await fetch(`${base}/api/messenger/contacts/search?phone=${encodeURIComponent(phone)}`, { headers: { authorization: `Bearer ${jwt}` } });
  assert.ok(search.status === 404 || search.status === 200, `search answered ${search.status}`);
  const missing = await fetch(`${base}/api/no-such-route?phone=${encodeURIComponent(phone)}&Refresh_Token=${refreshToken}&clientSecret=${clientSecret}`);
  assert.equal(missing.status, 404);
  // A repeated parameter, which the schema refuses: a 400 whose message may quote the input.
  await fetch(`${base}/api/messenger/contacts/search?phone=${encodeURIComponent(phone)}&phone=${encodeURIComponent(phone)}`, { headers: { authorization: `Bearer ${jwt}` } });

  await waitFor('the spans of the negotiate and the searches at the receiver', () => otlp.text().includes('/hubs/messenger/negotiate') && otlp.text().includes('/api/no-such-route'), 30_000);
  service.child.kill('SIGTERM');
  const [code] = await service.exited;
  assert.equal(code, 0, service.log.text.slice(-2000));

  const secrets = { 'the JWT': jwt, 'the hub connection token': connectionToken, 'the phone': phone, 'its digits': phone.slice(1), 'a *token parameter': refreshToken, 'a *secret parameter': clientSecret };
  assertAbsent(otlp.text(), secrets, 'the trace backend');
  assertAbsent(service.log.text, secrets, 'the log');
  // Not vacuous: the URLs were exported and logged, with the values replaced.
  assert.match(otlp.text(), /access_token=\[REDACTED\]/);
  assert.match(otlp.text(), /phone=\[REDACTED\]/);
  assert.match(service.log.text, /\/api\/messenger\/contacts\/search\?phone=\[REDACTED\]/);
  assert.match(service.log.text, /\/hubs\/messenger\?id=\[REDACTED\]&access_token=\[REDACTED\]/);
});

test('redactSecrets: the named parameters and any *token* / *secret* one, by decoded name, whatever the value', () => {
  assert.equal(redactSecrets('/hubs/messenger?id=abc.def&access_token=eyJ.x.y'), '/hubs/messenger?id=[REDACTED]&access_token=[REDACTED]');
  assert.equal(redactSecrets('phone=%2B79991234567&page=2'), 'phone=[REDACTED]&page=2', 'a url.query value has no leading ?');
  assert.equal(redactSecrets('/x?Access%5FToken=abc&API_SECRET=s&mytokenid=q'), '/x?Access%5FToken=[REDACTED]&API_SECRET=[REDACTED]&mytokenid=[REDACTED]');
  assert.equal(redactSecrets('{"url":"/a?phone=+7999","msg":"id=1"}'), '{"url":"/a?phone=[REDACTED]","msg":"id=[REDACTED]"}', 'a JSON line keeps its shape');
  assert.equal(redactSecrets(JSON.stringify({ url: '/a?phone=+7"999\\1234' })), '{"url":"/a?phone=[REDACTED]"}', 'JSON escapes inside the value are redacted with it');
  assert.equal(redactSecrets('/api/chats?limit=20&before=abc'), '/api/chats?limit=20&before=abc', 'other parameters stay');
  assert.equal(redactSecrets('where c.id=$1 and x = 2'), 'where c.id=$1 and x = 2', 'an SQL comparison is no query pair');
});

test('the exporter redacts a span\'s name, attributes (strings and string arrays), events, links and status message, and keeps the rest', async () => {
  const url = '/api/messenger/contacts/search?phone=%2B79991234567&access_token=eyJ.a.b';
  const spanContext = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 };
  const span = {
    name: `GET ${url}`,
    kind: 1,
    spanContext: () => spanContext,
    startTime: [1, 0],
    endTime: [2, 0],
    status: { code: 2, message: `Route GET:${url} not found` },
    attributes: { 'url.path': url, 'http.response.status_code': 404, 'list': [url, 'plain'] },
    links: [{ context: spanContext, attributes: { 'url.full': `http://x${url}` } }],
    events: [{ name: 'exception', time: [1, 5], attributes: { 'exception.message': `bad ${url}` } }],
    duration: [1, 0],
    ended: true,
    resource: { attributes: {} },
    instrumentationScope: { name: 'test' },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  } as unknown as ReadableSpan;
  const inner = new InMemorySpanExporter();
  await new Promise((resolve) => redactingExporter(inner).export([span], resolve));
  const [out] = inner.getFinishedSpans();
  const text = JSON.stringify({ ...out, name: out!.name, attributes: out!.attributes, events: out!.events, links: out!.links, status: out!.status });
  assert.doesNotMatch(text, /79991234567|eyJ\.a\.b/);
  assert.equal(out!.attributes['url.path'], '/api/messenger/contacts/search?phone=[REDACTED]&access_token=[REDACTED]');
  assert.deepEqual(out!.attributes.list, ['/api/messenger/contacts/search?phone=[REDACTED]&access_token=[REDACTED]', 'plain']);
  assert.equal(out!.attributes['http.response.status_code'], 404);
  assert.equal(out!.spanContext().spanId, '00f067aa0ba902b7', 'ids, times and the rest are the span\'s own');
  assert.deepEqual(out!.endTime, [2, 0]);
  assert.equal(span.attributes['url.path'], url, 'the recorded span itself is left alone');
});
