import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TypingGate, TYPING_INTERVAL_MS } from '../src/presence.ts';
import { newClientMessageId } from '../src/wire.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('typing gate and clientMessageId', () => {
  test('typing is due once per chat per interval, and again after a reconnect', () => {
    const gate = new TypingGate();
    assert.equal(gate.due('c', 0), true);
    assert.equal(gate.due('c', TYPING_INTERVAL_MS - 1), false, 'within the interval: skipped');
    assert.equal(gate.due('d', 1), true, 'another chat is not held back');
    assert.equal(gate.due('c', TYPING_INTERVAL_MS), true);
    gate.reset();
    assert.equal(gate.due('c', TYPING_INTERVAL_MS + 1), true, 'a new connection starts over');
  });

  test('clientMessageId is a UUID v4, also where crypto.randomUUID is missing (plain-http pages)', () => {
    assert.match(newClientMessageId(), UUID_V4);
    // Shadow the prototype's randomUUID on this instance, as a browser on a plain-http origin lacks it.
    Object.defineProperty(crypto, 'randomUUID', { value: undefined, configurable: true });
    try {
      const ids = new Set(Array.from({ length: 100 }, () => newClientMessageId()));
      assert.equal(ids.size, 100);
      for (const id of ids) assert.match(id, UUID_V4);
    } finally {
      delete (crypto as { randomUUID?: unknown }).randomUUID;
    }
    assert.equal(typeof crypto.randomUUID, 'function', 'restored');
  });
});
