import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createEffectsTable, effects, labelledMessage, nextTestOffset, recordEffect, testLog, type LabelPayload } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import type { ConsumerDefinition, IncomingMessage, OutgoingMessage } from '../../../src/platform/events/bus.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';
import { envelopeToWire, type EventEnvelope } from '../../../src/platform/events/envelope.ts';
import { PoisonMessageError } from '../../../src/platform/events/errors.ts';
import { metricValue } from '../../support/metrics.ts';

/**
 * The optional batch handler of a consumer (consumer-transaction.ts): it receives the group's
 * fresh events of handled types in one call inside the inbox transaction, and when it throws, the
 * group is rolled back and handled message by message, with the single path's outcomes.
 */

const t: TestDatabase = await createTestDatabase();
await createEffectsTable(t.pool);

type Payload = LabelPayload;
const message = labelledMessage;
const label = (e: EventEnvelope) => (e.payload as Payload).Label;

/**
 * A processor whose consumer has a batch handler (unless `batch` is null); both paths record one
 * effect row per event in the transaction, as real handlers do. `calls` lists what each path got.
 */
function processor(
  name: string,
  opts: { single?: (label: string) => void; batch?: ((labels: string[]) => void) | null } = {},
) {
  const calls = { single: [] as string[], batch: [] as string[][] };
  const deadLetters: OutgoingMessage[] = [];
  const registry = new Registry();
  const definition: ConsumerDefinition = {
    name,
    topic: 'pin.test.v1',
    groupId: name,
    eventTypes: ['E'],
    handle: async (e, tx) => {
      calls.single.push(label(e));
      opts.single?.(label(e));
      await recordEffect(tx, name, label(e));
    },
  };
  if (opts.batch !== null) {
    definition.handleBatch = async (events, tx) => {
      const labels = events.map(label);
      calls.batch.push(labels);
      for (const l of labels) await recordEffect(tx, name, l);
      opts.batch?.(labels); // after the writes: a throw must roll them back
    };
  }
  const p = createMessageProcessor(resolveConsumer(definition), {
    db: t.db,
    log: testLog,
    metrics: consumerMetrics(registry),
    publish: async (m) => void deadLetters.push(...m),
  });
  const outcome = (o: string) => metricValue(registry, 'consumer_messages_total', { outcome: o });
  return { p, calls, deadLetters, registry, outcome };
}

describe('consumer runner: batch handler', () => {
  test('gets the fresh events of handled types in partition order, once per group, in the inbox transaction', async () => {
    const { p, calls, outcome } = processor('batch-fresh');
    const before = message('b0');
    assert.deepEqual(await p.processBatch([before]), { done: 1 });
    const a = message('b1');
    const foreign = message('b-foreign', { eventType: 'Other' });

    const result = await p.processBatch([a, { ...a, offset: nextTestOffset() }, foreign, message('b2'), { ...before, offset: nextTestOffset() }, message('b3')]);

    assert.deepEqual(result, { done: 6 });
    assert.deepEqual(calls.single, ['b0'], 'a group with one fresh event takes the single path');
    assert.deepEqual(calls.batch, [['b1', 'b2', 'b3']], 'duplicates (in the group and redelivered) and foreign types are left out');
    assert.deepEqual(await effects(t.pool, 'batch-fresh'), ['b0', 'b1', 'b2', 'b3']);
    const { rows } = await t.pool.query(`select count(*)::int as n from platform.inbox where consumer = 'batch-fresh'`);
    assert.equal(rows[0].n, 4);
    assert.deepEqual([await outcome('handled'), await outcome('duplicate'), await outcome('skipped')], [4, 2, 1]);
  });

  test('a batch handler that throws is rolled back and the group is handled message by message, with the same outcome', async () => {
    const { p, calls, registry, outcome } = processor('batch-throws', {
      batch: () => {
        throw new Error('set-based statement refused');
      },
    });
    const batch = [message('t1'), message('t2'), message('t3')];

    assert.deepEqual(await p.processBatch(batch), { done: 3 });

    assert.deepEqual(calls.batch, [['t1', 't2', 't3']]);
    assert.deepEqual(calls.single, ['t1', 't2', 't3']);
    assert.deepEqual(await effects(t.pool, 'batch-throws'), ['t1', 't2', 't3'], "the batch's own writes were rolled back");
    assert.equal(await outcome('handled'), 3, 'counted once, after the commit that kept them');
    assert.equal(await metricValue(registry, 'consumer_batch_fallbacks_total', { consumer: 'batch-throws' }), 1);
  });

  test('a poison message in a batch is dead-lettered by the fallback exactly as without a batch handler', async () => {
    const poisonY = (l: string) => {
      if (l.endsWith('-y')) throw new PoisonMessageError('BAD_LABEL', 'label y is not allowed');
    };
    const run = async (name: string, batch: ((labels: string[]) => void) | null) => {
      const h = processor(name, { single: poisonY, batch });
      const result = await h.p.processBatch([message(`${name}-x`), message(`${name}-y`), message(`${name}-z`)]);
      return {
        result,
        effects: (await effects(t.pool, name)).map((e) => e.slice(name.length)),
        dlq: h.deadLetters.map((m) => [m.headers['dlq-code'], m.headers['message-id']?.toString().slice(name.length + 4)]),
        handled: await h.outcome('handled'),
        deadLettered: await h.outcome('dead_lettered'),
      };
    };
    const withBatch = await run('poison-batch', (labels) => labels.forEach(poisonY));
    const withoutBatch = await run('poison-single', null);

    assert.deepEqual(withBatch, withoutBatch);
    assert.deepEqual(withBatch, { result: { done: 3 }, effects: ['-x', '-z'], dlq: [['BAD_LABEL', '-y']], handled: 2, deadLettered: 1 });
  });

  test('an infrastructure error after a fallback holds the failing message; the ones before it commit', async () => {
    let fail = true;
    const { p, calls } = processor('batch-infra', {
      single: (l) => {
        if (l === 'i2' && fail) throw new Error('deadlock detected');
      },
      batch: (labels) => {
        if (labels.includes('i2') && fail) throw new Error('deadlock detected');
      },
    });
    const batch = [message('i1'), message('i2'), message('i3')];

    const first = await p.processBatch(batch);

    assert.equal(first.done, 1);
    assert.match(String(first.error), /deadlock/);
    assert.deepEqual(await effects(t.pool, 'batch-infra'), ['i1']);
    fail = false;
    assert.deepEqual(await p.processBatch(batch.slice(1)), { done: 2 });
    assert.deepEqual(await effects(t.pool, 'batch-infra'), ['i1', 'i2', 'i3']);
    assert.deepEqual(calls.batch.at(-1), ['i2', 'i3'], 'the retry goes through the batch handler again');
  });
});
