import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDatabase } from '../../support/db.ts';
import { freePort, startService } from '../../support/service-process.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The service as deployed (`node src/main.ts`) with only the standard OTEL_* environment: its
 * spans reach an OTLP/HTTP endpoint (here a local node:http server taking POST /v1/traces as
 * JSON), with the service name and the HTTP request's route. Without the endpoint it exports
 * nothing and says tracing is off by not saying it is on.
 */

interface OtlpSpan {
  name: string;
  traceId: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string } }[];
}
interface OtlpExport {
  resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

async function collector() {
  const received: { contentType: string | undefined; body: OtlpExport }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') received.push({ contentType: req.headers['content-type'], body: JSON.parse(body) as OtlpExport });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const spans = () =>
    received.flatMap((r) => r.body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((span) => ({ span, resource: rs.resource })))));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, spans, close: () => server.close() };
}

/** On the in-process bus (KAFKA_BROKERS emptied, allowed on a real database): the spans of interest need no broker. */
const env = (more: Record<string, string>) => ({ DATABASE_URL: '', KAFKA_BROKERS: '', ALLOW_INSECURE_DEFAULTS: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: '', ...more });

async function listening(service: ReturnType<typeof startService>): Promise<void> {
  await waitFor('the service to listen', () => /Server listening/.test(service.log.text), 60_000).catch((err: Error) =>
    assert.fail(`${err.message}\n${service.log.text.slice(-3000)}`),
  );
}

test('OTEL_EXPORTER_OTLP_ENDPOINT set: the service exports its spans as OTLP/HTTP JSON, named after OTEL_SERVICE_NAME', async (t) => {
  const otlp = await collector();
  t.after(() => otlp.close());
  const database = await createTestDatabase();
  const port = await freePort();
  const service = startService(
    env({ DATABASE_URL: database.url, PORT: String(port), OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'pin-otlp-test', OTEL_BSP_SCHEDULE_DELAY: '100' }),
  );
  await listening(service);
  assert.match(service.log.text, /"msg":"tracing on/);

  const res = await fetch(`http://127.0.0.1:${port}/api/ops/jobs`, { headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } });
  assert.equal(res.status, 401, 'no token: the request is refused, and traced all the same');
  await waitFor('the request span at the collector', () => otlp.spans().some(({ span }) => span.traceId === '4bf92f3577b34da6a3ce929d0e0e4736'), 30_000);

  assert.equal(otlp.received[0]!.contentType, 'application/json');
  const { span, resource } = otlp.spans().find(({ span }) => span.traceId === '4bf92f3577b34da6a3ce929d0e0e4736' && span.kind === 2 /* SERVER */)!;
  assert.equal(span.name, 'GET /api/ops/jobs', 'the route, from the incoming traceparent on');
  assert.equal(resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue, 'pin-otlp-test');
  await waitFor('a job run span (the outbox publisher runs at start)', () => otlp.spans().some(({ span }) => / run$/.test(span.name)), 30_000);

  service.child.kill('SIGTERM');
  const [code] = await service.exited;
  assert.equal(code, 0, service.log.text.slice(-2000));
});

test('OTEL_EXPORTER_OTLP_ENDPOINT unset: tracing stays off, no trace ids on the log lines', async () => {
  const database = await createTestDatabase();
  const port = await freePort();
  const service = startService(env({ DATABASE_URL: database.url, PORT: String(port), LOG_LEVEL: 'debug' }));
  await listening(service);
  await fetch(`http://127.0.0.1:${port}/api/ops/jobs`);
  await waitFor('a job run logged', () => /"msg":"job completed"/.test(service.log.text), 30_000);
  service.child.kill('SIGTERM');
  await service.exited;
  assert.doesNotMatch(service.log.text, /tracing on/);
  assert.deepEqual(service.lines().filter((l) => 'trace_id' in l || 'span_id' in l), []);
});
