import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import http from 'node:http';
import pg from 'pg';
import { trace } from '@opentelemetry/api';
import { buildTestApp } from '../../support/app.ts';
import { logCapture } from '../../support/logs.ts';
import { startTracing } from '../../../src/platform/observability/tracing-sdk.ts';
import { currentTraceparent, tracingOn } from '../../../src/platform/observability/tracing.ts';
import { enqueue } from '../../../src/platform/outbox/index.ts';
import identity from '../../../src/modules/identity/index.ts';

/**
 * Tracing off (OTEL_EXPORTER_OTLP_ENDPOINT unset) costs nothing: no SDK module is loaded, no
 * provider is registered, no module is patched, outbox rows carry no traceparent, log lines no ids.
 */

const capture = logCapture('debug');
const { app, config, database, token } = await buildTestApp({}, { modules: [identity], logDestination: capture.stream, logLevel: 'debug' });

test('no endpoint: startTracing starts nothing, loads no SDK and patches neither pg nor http', async () => {
  assert.equal(config.OTEL_EXPORTER_OTLP_ENDPOINT, undefined);
  assert.equal(await startTracing(config, capture.log), null);
  assert.equal(tracingOn(), false);

  const res = await app.inject({
    method: 'POST',
    url: '/api/identity/users',
    headers: { authorization: `Bearer ${await token({ admin: true })}` },
    payload: { name: { firstName: 'Без', lastName: 'Трассы' }, phoneNumber: '+79165550909' },
  });
  assert.equal(res.statusCode, 201, res.body);
  await app.platform.runner.runNow('outbox-cleanup');

  const loaded = Object.keys(createRequire(import.meta.url).cache).filter((p) => /@opentelemetry\/(sdk-|instrumentation|exporter)|@fastify\/otel/.test(p));
  assert.deepEqual(loaded, [], 'no SDK, exporter or instrumentation module was loaded');
  assert.equal((pg.Client.prototype.query as { __wrapped?: boolean }).__wrapped, undefined);
  assert.equal((http.Server.prototype.emit as { __wrapped?: boolean }).__wrapped, undefined);
  assert.equal(trace.getTracerProvider().constructor.name, 'ProxyTracerProvider');
  assert.equal(trace.getActiveSpan(), undefined);

  const { rows } = await database.pool.query<{ traceparent: string | null }>(`select traceparent from platform.outbox`);
  assert.ok(rows.length > 0);
  assert.deepEqual(new Set(rows.map((r) => r.traceparent)), new Set([null]));
  await database.db.transaction(async (tx) => {
    assert.equal(currentTraceparent(), null);
    await enqueue(tx, { topic: 'pin.test.v1', eventType: 'E', aggregateType: 'A', aggregateId: 'a', occurredAt: new Date(), payload: {} });
  });
  assert.ok(capture.lines().some((l) => l.msg === 'job completed'));
  assert.deepEqual(capture.lines().filter((l) => 'trace_id' in l), []);
});
