import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelayMs, backoffProblems } from '../../../src/platform/backoff/index.ts';
import { deadLetterMessage, DLQ_HEADER } from '../../../src/platform/events/dead-letter.ts';
import { PoisonMessageError } from '../../../src/platform/events/errors.ts';
import { partitionForKey } from '../../../src/platform/events/in-process-bus.ts';
import { chunkByBytes, isKafkaUnreachable } from '../../../src/platform/events/kafka-util.ts';
import { topicsToCreate } from '../../../src/platform/events/topics.ts';
import { resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';
import { EVENT_TOPICS, TOPICS } from '../../../src/event-topics.ts';

describe('retry backoff (the kernel\'s one backoff, as consumers use it)', () => {
  const policy = { baseMs: 1000, factor: 2, capMs: 60_000, jitter: 0.2 };
  test('starts at the base delay and doubles per attempt', () => {
    assert.equal(backoffDelayMs(policy, 1, () => 0), 1000);
    assert.equal(backoffDelayMs(policy, 2, () => 0), 2000);
    assert.equal(backoffDelayMs(policy, 4, () => 0), 8000);
  });
  test('is capped however many attempts failed (retries are unlimited)', () => {
    assert.equal(backoffDelayMs(policy, 7, () => 0), 60_000);
    assert.equal(backoffDelayMs(policy, 10_000, () => 0), 60_000);
  });
  test('jitter only lengthens, by at most its fraction, after the cap', () => {
    assert.equal(backoffDelayMs(policy, 3, () => 1), 4800);
    assert.equal(backoffDelayMs(policy, 50, () => 1), 72_000);
    assert.equal(backoffDelayMs({ ...policy, jitter: 0 }, 3, () => 1), 4000);
  });
  test('a fixed delay is factor 1', () => {
    assert.deepEqual([1, 2, 9].map((n) => backoffDelayMs({ baseMs: 30_000, factor: 1, capMs: 30_000, jitter: 0 }, n)), [30_000, 30_000, 30_000]);
  });
  test('invalid backoffs are named', () => {
    assert.deepEqual(backoffProblems({ baseMs: 0, factor: 0.5, capMs: -1, jitter: 2 }, 'X'), [
      'X: base must be > 0',
      'X: factor must be ≥ 1',
      'X: cap must be ≥ base',
      'X: jitter must be within 0..1',
    ]);
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
  test('every topic of docs/architecture.md is in the catalogue with 6 partitions', () => {
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
    assert.deepEqual(c.backoff, { baseMs: 1000, factor: 2, capMs: 60_000, jitter: 0.2 });
    assert.equal(c.physicalTopic, 'tB.pin.x.v1');
    assert.equal(c.groupId, 'tB.g');
    assert.equal(c.idempotencyKey({ messageId: 'm1' } as never), 'c:m1');
  });
  test('an invalid definition fails at subscribe time with every problem named', () => {
    assert.throws(() => resolveConsumer({ ...def, eventTypes: [], backoff: { baseMs: 0, factor: 2, capMs: 1, jitter: 0 } }), /eventTypes.*base must be > 0/);
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
