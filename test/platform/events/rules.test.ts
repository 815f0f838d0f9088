import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { retryDelayMs } from '../../../src/platform/events/backoff.ts';
import { deadLetterMessage, DLQ_HEADER } from '../../../src/platform/events/dead-letter.ts';
import { PoisonMessageError } from '../../../src/platform/events/errors.ts';
import { partitionForKey } from '../../../src/platform/events/in-process-bus.ts';
import { chunkByBytes, isKafkaUnreachable } from '../../../src/platform/events/kafka-util.ts';
import { topicsToCreate } from '../../../src/platform/events/topics.ts';
import { resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';
import { EVENT_TOPICS, TOPICS } from '../../../src/event-topics.ts';

describe('retry backoff', () => {
  const policy = { initialMs: 1000, maxMs: 60_000 };
  test('starts at the initial delay and doubles per attempt', () => {
    assert.equal(retryDelayMs(1, policy, () => 0), 1000);
    assert.equal(retryDelayMs(2, policy, () => 0), 2000);
    assert.equal(retryDelayMs(4, policy, () => 0), 8000);
  });
  test('is capped at maxMs however many attempts failed (retries are unlimited)', () => {
    assert.equal(retryDelayMs(7, policy, () => 0), 60_000);
    assert.equal(retryDelayMs(10_000, policy, () => 0), 60_000);
  });
  test('jitter only shortens, by at most 20 %', () => {
    assert.equal(retryDelayMs(3, policy, () => 1), 3200);
    assert.ok(retryDelayMs(50, policy, () => 0.5) <= 60_000);
  });
});

describe('dead-letter message', () => {
  test('keeps the original key, value and headers and adds code, reason and origin', () => {
    const msg = {
      topic: 'tX.pin.identity.users.v1',
      partition: 3,
      offset: '42',
      key: Buffer.from('k'),
      value: Buffer.from('not json'),
      headers: { 'message-id': Buffer.from('m1'), other: [Buffer.from('a'), Buffer.from('b')] },
    };
    const dlq = deadLetterMessage(msg, new PoisonMessageError('ENVELOPE_INVALID_JSON', 'message value is not JSON'));
    assert.equal(dlq.topic, 'tX.pin.identity.users.v1.dlq');
    assert.equal(dlq.key, msg.key);
    assert.equal(dlq.value, msg.value);
    assert.deepEqual(dlq.headers, {
      'message-id': Buffer.from('m1'),
      other: Buffer.from('a'),
      [DLQ_HEADER.code]: 'ENVELOPE_INVALID_JSON',
      [DLQ_HEADER.reason]: 'message value is not JSON',
      [DLQ_HEADER.originTopic]: 'tX.pin.identity.users.v1',
      [DLQ_HEADER.originPartition]: '3',
      [DLQ_HEADER.originOffset]: '42',
    });
  });
});

describe('topic catalogue', () => {
  test('every DESIGN topic is in the catalogue with 6 partitions', () => {
    assert.deepEqual(EVENT_TOPICS.map((t) => t.name).sort(), Object.values(TOPICS).sort());
    for (const t of EVENT_TOPICS) assert.equal(t.partitions, 6, t.name);
  });
  test('consumed topics get a .dlq twin with the same partition count, others do not', () => {
    const specs = topicsToCreate(EVENT_TOPICS, { prefix: 'tA.' });
    const names = specs.map((s) => s.name);
    assert.ok(names.includes('tA.pin.identity.users.v1.dlq'));
    assert.ok(names.includes('tA.pin.messenger.message-posted.v1.dlq'));
    assert.ok(names.includes('tA.pin.user-activity.property-object-view-ended.v1.dlq'));
    assert.ok(!names.includes('tA.pin.identity.access.v1.dlq'));
    assert.equal(specs.length, EVENT_TOPICS.length + EVENT_TOPICS.filter((t) => t.consumed).length);
    const override = topicsToCreate(EVENT_TOPICS, { partitions: 3 });
    assert.ok(override.every((s) => s.partitions === 3 && !s.name.startsWith('tA.')));
  });
});

describe('consumer definition', () => {
  const def = { name: 'c', topic: 'pin.x.v1', groupId: 'g', eventTypes: ['E'], handle: async () => {} };
  test('defaults: contract version 1, backoff 1 s → 60 s, key `<name>:<messageId>`, prefixed names', () => {
    const c = resolveConsumer(def, 'tB.');
    assert.equal(c.contractVersion, 1);
    assert.deepEqual(c.backoff, { initialMs: 1000, maxMs: 60_000 });
    assert.equal(c.physicalTopic, 'tB.pin.x.v1');
    assert.equal(c.groupId, 'tB.g');
    assert.equal(c.idempotencyKey({ messageId: 'm1' } as never), 'c:m1');
  });
  test('an invalid definition fails at subscribe time with every problem named', () => {
    assert.throws(() => resolveConsumer({ ...def, eventTypes: [], backoff: { initialMs: 0, maxMs: 1 } }), /eventTypes.*backoff/);
  });
});

describe('kafka adapter helpers', () => {
  const m = (bytes: number) => ({ topic: 't', key: null, value: 'x'.repeat(bytes), headers: {} });
  test('publishes are split into byte-bounded chunks in order; an oversized message goes alone', () => {
    const chunks = chunkByBytes([m(400), m(400), m(400), m(2000), m(10)], 1000);
    assert.deepEqual(chunks.map((c) => c.map((x) => (x.value as string).length)), [[400, 400], [400], [2000], [10]]);
  });
  test('connection failures count as unreachable, broker refusals do not', () => {
    const conn = Object.assign(new Error('connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' });
    const retries = Object.assign(new Error('retries exceeded', { cause: conn }), { name: 'KafkaJSNumberOfRetriesExceeded' });
    const tooLarge = Object.assign(new Error('too large'), { name: 'KafkaJSProtocolError', type: 'MESSAGE_TOO_LARGE' });
    assert.equal(isKafkaUnreachable(conn), true);
    assert.equal(isKafkaUnreachable(retries), true);
    assert.equal(isKafkaUnreachable(tooLarge), false);
  });
});

describe('in-process partitioning', () => {
  test('a key always lands on the same partition, keys spread over all partitions', () => {
    assert.equal(partitionForKey('chat-1', 6), partitionForKey(Buffer.from('chat-1'), 6));
    const used = new Set(Array.from({ length: 200 }, (_, i) => partitionForKey(`key-${i}`, 6)));
    assert.equal(used.size, 6);
  });
});
