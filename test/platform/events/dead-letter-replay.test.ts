import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defineConsumer } from '../../../src/platform/events/bus.ts';
import { resolveConsumer } from '../../../src/platform/events/consumer-definition.ts';
import { replayPlanOf } from '../../../src/platform/events/dead-letter-replay.ts';

/** What a replay of a dead letter publishes and whose inbox row it deletes, or why it cannot replay it (pure rules). */

const reader = (name: string, topic = 'pin.orders.v1') =>
  resolveConsumer(defineConsumer({ name, topic, groupId: name, eventTypes: ['OrderChangedKafkaEvent'], handle: async () => undefined }), 'tX.');

const envelope = {
  'message-id': 'm-1',
  'event-type': 'OrderChangedKafkaEvent',
  'contract-version': '1',
  'aggregate-type': 'Order',
  'aggregate-id': 'o',
  'occurred-at': '2026-12-05T10:00:00.000Z',
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
};
const dlq = { 'dlq-code': 'CONSUMER_DATA_ERROR', 'dlq-reason': 'bad', 'dlq-origin-topic': 'tX.pin.orders.v1', 'dlq-origin-partition': '2', 'dlq-origin-offset': '7' };
const deadLetter = (headers: Record<string, string>, value: string | null = '{"Seq":1}') => ({ topic: 'tX.pin.orders.v1.dlq', partition: 0, offset: '3', key: 'o', value, headers });

describe('dead-letter replay plan', () => {
  test('the original goes back to its origin topic with its key, value and headers, without the dlq-* ones; the consumer it names loses its inbox row', () => {
    const plan = replayPlanOf(deadLetter({ ...envelope, ...dlq, 'dlq-consumer': 'orders' }), [reader('orders'), reader('audit')]);
    assert.deepEqual(plan, { ok: true, consumer: 'orders', inboxKey: 'orders:m-1', original: { topic: 'tX.pin.orders.v1', key: 'o', value: '{"Seq":1}', headers: envelope } });
  });

  test('a dead letter without dlq-consumer (written before it) replays when one consumer reads its topic, not when several do', () => {
    const plan = replayPlanOf(deadLetter({ ...envelope, ...dlq }), [reader('orders'), reader('other', 'pin.users.v1')]);
    assert.deepEqual(plan.ok && [plan.consumer, plan.inboxKey], ['orders', 'orders:m-1']);
    const ambiguous = replayPlanOf(deadLetter({ ...envelope, ...dlq }), [reader('orders'), reader('audit')]);
    assert.equal(ambiguous.ok, false);
  });

  test('an unreadable original replays with no inbox row to delete (it never got one)', () => {
    const plan = replayPlanOf(deadLetter({ ...dlq, 'dlq-consumer': 'orders' }, 'not json'), [reader('orders')]);
    assert.deepEqual(plan.ok && [plan.inboxKey, plan.original.value], [null, 'not json']);
  });

  test('a copy stripped of its original, or of a topic no consumer here reads, is not replayable', () => {
    assert.equal(replayPlanOf(deadLetter({ ...dlq, 'dlq-consumer': 'orders', 'dlq-dropped-bytes': '1048600' }, null), [reader('orders')]).ok, false);
    assert.equal(replayPlanOf(deadLetter({ ...envelope, ...dlq }), [reader('other', 'pin.users.v1')]).ok, false);
  });
});
