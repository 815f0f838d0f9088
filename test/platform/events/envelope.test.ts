import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { envelopeFromWire, envelopeToWire, HEADER, POISON, type EventEnvelope } from '../../../src/platform/events/envelope.ts';
import { PoisonMessageError } from '../../../src/platform/events/errors.ts';

const envelope: EventEnvelope<{ UserId: string; Name: { FirstName: string } }> = {
  messageId: '0190a0b1-0000-7000-8000-000000000001',
  topic: 'pin.identity.users.v1',
  key: '5b0f3a4e-1111-4222-8333-444455556666',
  eventType: 'UserUpsertedKafkaEvent',
  contractVersion: 1,
  aggregateType: 'User',
  aggregateId: '5b0f3a4e-1111-4222-8333-444455556666',
  occurredAt: '2026-01-02T03:04:05.678Z',
  correlationId: 'corr-1',
  payload: { UserId: '5b0f3a4e-1111-4222-8333-444455556666', Name: { FirstName: 'Иван' } },
};

/** What kafkajs hands a consumer: Buffers everywhere. */
function asReceived(wire: ReturnType<typeof envelopeToWire>) {
  const headers: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(wire.headers)) headers[k] = Buffer.from(v);
  return { key: Buffer.from(wire.key as string), value: Buffer.from(wire.value as string), headers };
}

function poisonCode(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof PoisonMessageError, `expected PoisonMessageError, got ${String(err)}`);
    return err.code;
  }
  assert.fail('expected a PoisonMessageError');
}

describe('event envelope wire mapping', () => {
  test('key is the aggregate id, value the PascalCase payload as UTF-8 JSON, metadata in headers', () => {
    const wire = envelopeToWire(envelope);
    assert.equal(wire.key, envelope.aggregateId);
    assert.deepEqual(JSON.parse(wire.value as string), envelope.payload);
    assert.deepEqual(wire.headers, {
      'message-id': envelope.messageId,
      'event-type': 'UserUpsertedKafkaEvent',
      'contract-version': '1',
      'aggregate-type': 'User',
      'aggregate-id': envelope.aggregateId,
      'occurred-at': '2026-01-02T03:04:05.678Z',
      'correlation-id': 'corr-1',
    });
  });

  test('a message read back from Buffers equals the envelope that was sent', () => {
    assert.deepEqual(envelopeFromWire(asReceived(envelopeToWire(envelope)), envelope.topic), envelope);
  });

  test('correlation id is optional both ways', () => {
    const { correlationId: _, ...without } = envelope;
    const wire = envelopeToWire(without);
    assert.equal(wire.headers[HEADER.correlationId], undefined);
    assert.equal('correlationId' in envelopeFromWire(asReceived(wire), envelope.topic), false);
  });

  test('occurred-at is normalised to ISO-8601 UTC', () => {
    const raw = asReceived(envelopeToWire(envelope));
    raw.headers[HEADER.occurredAt] = Buffer.from('2026-01-02T06:04:05.678+03:00');
    assert.equal(envelopeFromWire(raw, envelope.topic).occurredAt, '2026-01-02T03:04:05.678Z');
  });

  test('a missing header is poison with a stable code', () => {
    for (const name of Object.values(HEADER).filter((h) => h !== HEADER.correlationId)) {
      const raw = asReceived(envelopeToWire(envelope));
      delete raw.headers[name];
      assert.equal(poisonCode(() => envelopeFromWire(raw, envelope.topic)), POISON.missingHeader, name);
    }
  });

  test('no headers at all is poison', () => {
    assert.equal(poisonCode(() => envelopeFromWire({ key: null, value: Buffer.from('{}') }, 't')), POISON.missingHeader);
  });

  test('a value that is not JSON is poison, and the reason does not quote the body', () => {
    const raw = asReceived(envelopeToWire(envelope));
    raw.value = Buffer.from('{"Phone": "+79991234567"');
    try {
      envelopeFromWire(raw, envelope.topic);
      assert.fail('expected poison');
    } catch (err) {
      assert.ok(err instanceof PoisonMessageError);
      assert.equal(err.code, POISON.invalidJson);
      assert.doesNotMatch(err.message, /7999/);
    }
  });

  test('an empty value is poison', () => {
    const raw = asReceived(envelopeToWire(envelope));
    raw.value = Buffer.alloc(0);
    assert.equal(poisonCode(() => envelopeFromWire(raw, envelope.topic)), POISON.emptyValue);
  });

  test('bad contract-version and occurred-at values are poison', () => {
    for (const [name, value] of [
      [HEADER.contractVersion, 'one'],
      [HEADER.contractVersion, '0'],
      [HEADER.occurredAt, 'yesterday'],
      [HEADER.messageId, 'x'.repeat(129)],
    ] as const) {
      const raw = asReceived(envelopeToWire(envelope));
      raw.headers[name] = Buffer.from(value);
      assert.equal(poisonCode(() => envelopeFromWire(raw, envelope.topic)), POISON.invalidHeader, `${name}=${value}`);
    }
  });

  test('a message without a key falls back to the aggregate id', () => {
    const raw = { ...asReceived(envelopeToWire(envelope)), key: null };
    assert.equal(envelopeFromWire(raw, envelope.topic).key, envelope.aggregateId);
  });
});
