import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Emitter } from '../src/emitter.ts';
import { errorOfHubCall, MessengerError } from '../src/errors.ts';

/** The hub-call error mapping and the emitter, without a server (end to end: messenger-client.lifecycle.test.ts). */

describe('hub call errors and the emitter', () => {
  test('a hub refusal keeps its code (a *_NOT_FOUND as 404, else 400); an unexplained failure is 500, a lost connection 0', () => {
    const of = (message: string) => {
      const e = errorOfHubCall(new Error(message));
      return [e.code, e.status, e.retryable];
    };
    assert.deepEqual(of('MSG_CHAT_NOT_FOUND: no chat with this id among your chats'), ['MSG_CHAT_NOT_FOUND', 404, false]);
    assert.deepEqual(of('VALIDATION_FAILED: Typing takes one argument, the chat id (a UUID).'), ['VALIDATION_FAILED', 400, false]);
    assert.deepEqual(of("An unexpected error occurred invoking 'Typing' on the server."), ['HUB_METHOD_FAILED', 500, true]);
    assert.deepEqual(of("Cannot send data if the connection is not in the 'Connected' State."), ['CONNECTION_LOST', 0, true]);
    const typed = new MessengerError('X', 'y', 409);
    assert.equal(errorOfHubCall(typed), typed, 'a typed one passes through');
  });

  test('listeners are called in the order added, once each however often added, and not after unsubscribing', () => {
    const e = new Emitter<{ a: [n: number]; b: [] }>();
    const seen: string[] = [];
    const first = (n: number) => seen.push(`first:${n}`);
    e.on('a', first);
    e.on('a', first);
    const off = e.on('a', (n) => seen.push(`second:${n}`));
    e.emit('a', 1);
    off();
    e.emit('a', 2);
    e.emit('b');
    assert.deepEqual(seen, ['first:1', 'second:1', 'first:2']);
  });
});
