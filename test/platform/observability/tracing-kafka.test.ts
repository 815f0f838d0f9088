import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestTracing, type ReadableSpan } from '../../support/tracing.ts';
import { buildTestApp } from '../../support/app.ts';
import { createTestKafka } from '../../support/kafka.ts';
import { waitFor } from '../../support/wait.ts';
import identity from '../../../src/modules/identity/index.ts';
import messenger from '../../../src/modules/messenger/index.ts';

/**
 * Context travels with events: ONE trace from an HTTP request through the outbox row,
 * the publisher and the real Kafka broker into the consumer's database write. The request goes
 * over a real socket, so the http instrumentation and @fastify/otel take part as in production.
 */

const tracing = await startTestTracing();
const k = await createTestKafka();
const { app, token, database } = await buildTestApp(
  { KAFKA_BROKERS: k.brokers.join(','), KAFKA_TOPIC_PREFIX: k.prefix, JOBS_ENABLED: 'true', OUTBOX_POLLING_INTERVAL: '200ms' },
  { modules: [identity, messenger] },
);
await app.platform.startBackground();
const base = await app.listen({ host: '127.0.0.1', port: 0 });
after(() => app.close());

const queryOf = (s: ReadableSpan) => String(s.attributes['db.query.text'] ?? '');

test('POST /api/identity/users → outbox row → publisher → Kafka → messenger replica write: all one traceId, each step the child of the one before', async () => {
  const res = await fetch(`${base}/api/identity/users`, {
    method: 'POST',
    headers: { authorization: `Bearer ${await token({ admin: true })}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: { firstName: 'Анна', lastName: 'Трассова' }, phoneNumber: '+79165557788' }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const user = (await res.json()) as { id: string };

  const server = tracing.one('POST /api/identity/users', (s) => s.kind === 1 /* SERVER */);
  const traceId = server.spanContext().traceId;
  const { rows } = await database.pool.query<{ id: string; traceparent: string }>(
    `select id, traceparent from platform.outbox where aggregate_id = $1 and event_type = 'UserUpsertedKafkaEvent'`,
    [user.id],
  );
  assert.equal(rows.length, 1);
  assert.match(rows[0]!.traceparent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`), 'the outbox row holds the request trace');

  await waitFor('the replica row written by the consumer', async () => {
    const r = await database.pool.query('select 1 from messenger.users where id = $1', [user.id]);
    return r.rowCount === 1;
  });
  const messageId = rows[0]!.id;
  const receive = await (async () => {
    await waitFor('the receive span ended', () => tracing.spans().some((s) => s.name === 'receive pin.identity.users.v1' && s.attributes['messaging.message.id'] === messageId));
    return tracing.one('receive pin.identity.users.v1', (s) => s.attributes['messaging.message.id'] === messageId);
  })();
  const send = tracing.one('send pin.identity.users.v1', (s) => s.attributes['messaging.message.id'] === messageId);

  assert.equal(send.spanContext().traceId, traceId, 'the send continues the request trace, not the publisher run');
  assert.equal(send.parentSpanContext?.spanId, rows[0]!.traceparent.split('-')[2], 'the send is the child of the span that enqueued');
  assert.equal(send.kind, 3, 'PRODUCER');
  assert.equal(receive.spanContext().traceId, traceId, 'through the broker: the traceparent header');
  assert.equal(receive.parentSpanContext?.spanId, send.spanContext().spanId);
  const handle = tracing.childrenOf(receive).find((s) => s.name === 'handle UserUpsertedKafkaEvent');
  assert.ok(handle, `handle under receive: ${tracing.childrenOf(receive).map((s) => s.name).join(', ')}`);
  const writes = tracing.childrenOf(handle).filter((s) => /messenger\.users/.test(queryOf(s)));
  assert.ok(writes.length > 0, `the replica write under handle: ${tracing.childrenOf(handle).map(queryOf).join(' | ')}`);
  for (const s of writes) assert.equal(s.spanContext().traceId, traceId);

  // The request's own SQL (the user insert and its outbox row) is in the trace too, under the request.
  const requestSql = tracing.spans().filter((s) => s.spanContext().traceId === traceId && /platform\.outbox/.test(queryOf(s)));
  assert.ok(requestSql.length > 0, 'the outbox insert is traced under the request');
});
