import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
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
  // Shaped as kafkajs throws them: a wrapper whose cause is the KafkaJSProtocolError with its type.
  const protocolError = (type: string) => Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type });
  const wrapped = (cause: Error) => Object.assign(new Error('wrapped', { cause }), { name: 'KafkaJSNonRetriableError' });

  test('unknown, unauthorised and invalid topics concern the topic, found through the cause chain', () => {
    for (const type of ['UNKNOWN_TOPIC_OR_PARTITION', 'TOPIC_AUTHORIZATION_FAILED', 'INVALID_TOPIC_EXCEPTION']) {
      assert.equal(isTopicLevelError(wrapped(protocolError(type))), true, type);
    }
  });

  test('errors about the messages or the connection do not', () => {
    assert.equal(isTopicLevelError(protocolError('MESSAGE_TOO_LARGE')), false);
    assert.equal(isTopicLevelError(wrapped(new Error('connection closed'))), false);
    assert.equal(isTopicLevelError('INVALID_TOPIC_EXCEPTION'), false);
  });
});

describe('stored publish error', () => {
  test('is name and message, truncated', () => {
    assert.equal(publishErrorText(Object.assign(new Error('boom'), { name: 'KafkaJSProtocolError' })), 'KafkaJSProtocolError: boom');
    assert.equal(publishErrorText(new Error('x'.repeat(2000))).length, 500);
  });
});
