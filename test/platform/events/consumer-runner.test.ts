import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createEffectsTable, effects, labelledMessage, nextTestOffset, recordEffect, testLog, type LabelPayload } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import type { IncomingMessage, OutgoingMessage } from '../../../src/platform/events/bus.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';
import { envelopeToWire, type EventEnvelope } from '../../../src/platform/events/envelope.ts';
import { PoisonMessageError } from '../../../src/platform/events/errors.ts';
import { metricValue } from '../../support/metrics.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const t: TestDatabase = await createTestDatabase();
await createEffectsTable(t.pool);

type Payload = LabelPayload;
const message = labelledMessage;

/** A processor over the real database; dead-letter copies are collected instead of produced. */
function processor(name: string, handle: (e: EventEnvelope<Payload>) => void) {
  const deadLetters: OutgoingMessage[] = [];
  const registry = new Registry();
  const p = createMessageProcessor(
    resolveConsumer({
      name,
      topic: 'pin.test.v1',
      groupId: name,
      eventTypes: ['E'],
      handle: async (e, tx) => {
        handle(e as EventEnvelope<Payload>);
        await recordEffect(tx, name, (e.payload as Payload).Label);
      },
    }),
    { db: t.db, log: testLog, metrics: consumerMetrics(registry), publish: async (m) => void deadLetters.push(...m) },
  );
  return { p, deadLetters, registry };
}

describe('consumer runner: messages of a partition share a transaction', () => {
  test("a failing message does not undo the ones before it; it and those after it stay for the retry", async () => {
    let fail = true;
    const { p } = processor('prefix', (e) => {
      if (e.payload.Label === 'b' && fail) throw new Error('deadlock detected');
    });
    const batch = [message('a'), message('b'), message('c')];

    const first = await p.processBatch(batch);

    assert.equal(first.done, 1);
    assert.match(String(first.error), /deadlock/);
    assert.deepEqual(await effects(t.pool, 'prefix'), ['a'], "a's effect is committed, b's and c's are not");
    const { rows } = await t.pool.query(`select idempotency_key from platform.inbox where consumer = 'prefix'`);
    assert.deepEqual(rows.map((r) => r.idempotency_key), ['prefix:msg-a']);

    fail = false;
    assert.deepEqual(await p.processBatch(batch.slice(1)), { done: 2 });
    assert.deepEqual(await effects(t.pool, 'prefix'), ['a', 'b', 'c']);
  });

  test('a message declared poison mid-batch is dead-lettered and the batch completes around it', async () => {
    const { p, deadLetters, registry } = processor('mid-poison', (e) => {
      if (e.payload.Label === 'y') throw new PoisonMessageError('BAD_LABEL', 'label y is not allowed');
    });
    const garbage: IncomingMessage = { topic: 'pin.test.v1', partition: 0, offset: nextTestOffset(), key: 'k', value: '{', headers: {} };

    const result = await p.processBatch([message('x'), message('y'), garbage, message('z')]);

    assert.deepEqual(result, { done: 4 });
    assert.deepEqual(await effects(t.pool, 'mid-poison'), ['x', 'z']);
    assert.deepEqual(deadLetters.map((m) => [m.topic, m.headers['dlq-code']]), [
      ['pin.test.v1.dlq', 'BAD_LABEL'],
      ['pin.test.v1.dlq', 'ENVELOPE_MISSING_HEADER'],
    ]);
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'handled' }), 2);
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'dead_lettered' }), 2);
  });

  test('the same message twice in one batch, and again later, is handled once', async () => {
    const { p, registry } = processor('same-batch', () => {});
    const m = message('once');

    assert.deepEqual(await p.processBatch([m, { ...m, offset: nextTestOffset() }]), { done: 2 });
    assert.deepEqual(await p.processBatch([{ ...m, offset: nextTestOffset() }]), { done: 1 });

    assert.deepEqual(await effects(t.pool, 'same-batch'), ['once']);
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'duplicate' }), 2);
  });

  test('a dead-letter topic that cannot be written holds the partition (retry), it never skips the message', async () => {
    const registry = new Registry();
    const p = createMessageProcessor(resolveConsumer({ name: 'dlq-down', topic: 'pin.test.v1', groupId: 'g', eventTypes: ['E'], handle: async () => {} }), {
      db: t.db,
      log: testLog,
      metrics: consumerMetrics(registry),
      publish: async () => {
        throw new Error('broker unreachable');
      },
    });
    const garbage: IncomingMessage = { topic: 'pin.test.v1', partition: 0, offset: '0', key: null, value: 'x', headers: {} };
    const result = await p.processBatch([message('before'), garbage]);
    assert.equal(result.done, 1);
    assert.match(String(result.error), /broker unreachable/);
  });
});
