import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultipleErrors, NetworkError, protocolErrors, ResponseError } from '@platformatic/kafka';
import { isTopicLevelError, publishErrorText, rowToMessage, splitHeldBack } from '../../../src/platform/outbox/messages.ts';
import type { PendingRow } from '../../../src/platform/outbox/sql.ts';

const row = (over: Partial<PendingRow> = {}): PendingRow => ({
  id: '0190a0b1-0000-7000-8000-000000000001',
  topic: 'pin.messenger.message-posted.v1',
  key: 'chat-1',
  eventType: 'MessagePostedKafkaEvent',
  contractVersion: 1,
  aggregateType: 'Chat',
  aggregateId: 'chat-1',
  occurredAt: '2026-01-02T03:04:05.000Z',
  correlationId: null,
  payload: '{"ChatId": "chat-1", "Seq": 7}',
  traceparent: null,
  createdAtMs: Date.parse('2026-01-02T03:04:05Z'),
  ...over,
});

describe('outbox row → wire message', () => {
  test('the prefix is applied to the topic only when sending; the value is the stored JSON as is', () => {
    const m = rowToMessage(row(), 'tC.');
    assert.equal(m.topic, 'tC.pin.messenger.message-posted.v1');
    assert.equal(m.key, 'chat-1');
    assert.equal(m.value, '{"ChatId": "chat-1", "Seq": 7}');
    assert.equal(m.headers['message-id'], '0190a0b1-0000-7000-8000-000000000001');
    assert.equal(m.headers['occurred-at'], '2026-01-02T03:04:05.000Z');
    assert.equal(m.headers['correlation-id'], undefined);
    assert.equal(rowToMessage(row()).topic, 'pin.messenger.message-posted.v1');
  });
});

describe('per-key hold back', () => {
  test('rows of a blocked key stay back, other keys and the same key on another topic go', () => {
    const rows = [row({ key: 'a' }), row({ key: 'b' }), row({ key: 'a' }), row({ key: 'a', topic: 'other' })];
    const { sendable, heldBack } = splitHeldBack(rows, new Set([`${rows[0]!.topic}\u0000a`]));
    assert.deepEqual(sendable.map((r) => `${r.topic}/${r.key}`), ['pin.messenger.message-posted.v1/b', 'other/a']);
    assert.equal(heldBack.length, 2);
  });

  test('every row of a blocked topic stays back, whatever its key', () => {
    const rows = [row({ key: 'a' }), row({ key: 'b', topic: 'other' }), row({ key: 'c' })];
    const { sendable, heldBack } = splitHeldBack(rows, new Set(), new Set([rows[0]!.topic]));
    assert.deepEqual(sendable.map((r) => r.key), ['b']);
    assert.deepEqual(heldBack.map((r) => r.key), ['a', 'c']);
  });
});

describe('topic-level send errors', () => {
  // As @platformatic/kafka throws them: "Producing messages failed." around the broker's Produce
  // response error (API 0), which carries one ProtocolError per refused partition.
  const wrapped = (inner: Error) => new MultipleErrors('Producing messages failed.', [inner]);
  const refused = (type: string) => wrapped(new ResponseError(0, 9, { '/topics/0/partitions/0': [protocolErrors[type]!.code, null] }, {}));

  test('unknown, unauthorised and invalid topics concern the topic, found inside the wrappers', () => {
    for (const type of ['UNKNOWN_TOPIC_OR_PARTITION', 'TOPIC_AUTHORIZATION_FAILED', 'INVALID_TOPIC_EXCEPTION']) {
      assert.equal(isTopicLevelError(refused(type)), true, type);
    }
  });

  test('errors about the messages or the connection do not', () => {
    assert.equal(isTopicLevelError(refused('MESSAGE_TOO_LARGE')), false);
    assert.equal(isTopicLevelError(wrapped(new NetworkError('Connection closed'))), false);
    assert.equal(isTopicLevelError('INVALID_TOPIC_EXCEPTION'), false);
  });
});

describe('stored publish error', () => {
  test('is name and message, truncated', () => {
    assert.equal(publishErrorText(new TypeError('boom')), 'TypeError: boom');
    // The library's wrapper says only "Producing messages failed."; its root names the reason and its code.
    assert.equal(publishErrorText(new MultipleErrors('Producing messages failed.', [new NetworkError('Connection to 127.0.0.1:1 failed.')])), 'Error[PLT_KFK_NETWORK]: Connection to 127.0.0.1:1 failed.');
    assert.equal(publishErrorText(new Error('x'.repeat(2000))).length, 500);
  });
});
