import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestTracing } from '../../support/tracing.ts';
import { createTestDatabase } from '../../support/db.ts';
import { createEffectsTable, labelledMessage, recordEffect, testLog } from '../events/support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import type { ConsumerDefinition } from '../../../src/platform/events/bus.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';

/**
 * The consumer runner continues the trace of a message's `traceparent` header: receive → handle →
 * the handler's SQL (pg instrumentation), in the producer's trace; a batch handler call is one
 * span linked to every message it took.
 */

const tracing = await startTestTracing();
const tdb = await createTestDatabase();
await createEffectsTable(tdb.pool);

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';
const traced = (label: string, parent = PARENT) => {
  const m = labelledMessage(label);
  m.headers = { ...m.headers, traceparent: Buffer.from(`00-${TRACE}-${parent}-01`) };
  return m;
};

function processor(name: string, withBatch: boolean) {
  const definition: ConsumerDefinition = {
    name,
    topic: 'pin.test.v1',
    groupId: name,
    eventTypes: ['E'],
    handle: (e, tx) => recordEffect(tx, name, (e.payload as { Label: string }).Label),
    ...(withBatch
      ? { handleBatch: async (events, tx) => { for (const e of events) await recordEffect(tx, name, (e.payload as { Label: string }).Label); } }
      : {}),
  };
  return createMessageProcessor(resolveConsumer(definition), {
    db: tdb.db,
    log: testLog,
    metrics: consumerMetrics(new Registry()),
    publish: async () => undefined,
  });
}

test('a message with a traceparent: receive (child of the header span) → handle → the INSERT, one trace; its transaction in the receive span', async () => {
  const p = processor('traced-single', false);
  assert.deepEqual(await p.processBatch([traced('one')]), { done: 1 });

  const receive = tracing.one('receive pin.test.v1');
  assert.equal(receive.spanContext().traceId, TRACE, 'the producer trace goes on');
  assert.equal(receive.parentSpanContext?.spanId, PARENT);
  assert.equal(receive.kind, 4, 'CONSUMER');
  assert.equal(receive.attributes['messaging.message.id'], 'msg-one');
  assert.equal(receive.attributes.outcome, 'handled');
  const handle = tracing.one('handle E');
  assert.equal(handle.parentSpanContext?.spanId, receive.spanContext().spanId);
  const statements = (s: typeof handle) => tracing.childrenOf(s).map((c) => String(c.attributes['db.query.text'] ?? c.name));
  assert.ok(statements(handle).some((q) => /insert into public\.test_effects/.test(q)), `storage under handle: ${statements(handle).join(' | ')}`);
  assert.ok(statements(receive).some((q) => /platform\.inbox/.test(q)), `the inbox insert under receive: ${statements(receive).join(' | ')}`);
});

test('a message without a traceparent starts a trace of its own; a redelivered duplicate says so', async () => {
  tracing.reset();
  const p = processor('traced-own', false);
  const m = labelledMessage('lonely');
  await p.processBatch([m]);
  await p.processBatch([{ ...m, offset: String(Number(m.offset) + 1000) }]);
  const [first, again] = tracing.spans().filter((s) => s.name === 'receive pin.test.v1');
  assert.equal(first!.parentSpanContext, undefined);
  assert.notEqual(first!.spanContext().traceId, TRACE);
  assert.equal(again!.attributes.outcome, 'duplicate');
});

test('a batch handler call is one span under the first message, linked to the others', async () => {
  tracing.reset();
  const p = processor('traced-batch', true);
  await p.processBatch([traced('b1', '1111111111111111'), traced('b2', '2222222222222222')]);
  const receives = tracing.spans().filter((s) => s.name === 'receive pin.test.v1');
  assert.deepEqual(receives.map((s) => s.parentSpanContext?.spanId).sort(), ['1111111111111111', '2222222222222222']);
  const batch = tracing.one('traced-batch handle batch');
  const first = receives.find((s) => s.parentSpanContext?.spanId === '1111111111111111')!;
  const second = receives.find((s) => s.parentSpanContext?.spanId === '2222222222222222')!;
  assert.equal(batch.parentSpanContext?.spanId, first.spanContext().spanId);
  assert.deepEqual(batch.links.map((l) => l.context.spanId), [second.spanContext().spanId]);
  assert.equal(batch.attributes.messages, 2);
});
