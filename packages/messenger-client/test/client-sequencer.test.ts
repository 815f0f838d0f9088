import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatSequencer, RecentKeys } from '../src/index.ts';
import { toChatMessage } from '../src/wire.ts';

const msg = (seq: number) => ({ chatId: 'c', messageId: `m${seq}`, seq });

describe('client ordering and dedupe (ChatSequencer)', () => {
  test('in-order messages are delivered at once; a duplicate (ChatId, Seq) is dropped', () => {
    const s = new ChatSequencer(0);
    assert.deepEqual(s.offer(msg(1)).deliver.map((m) => m.seq), [1]);
    assert.deepEqual(s.offer(msg(1)), { deliver: [], gap: false });
    assert.deepEqual(s.offer(msg(2)).deliver.map((m) => m.seq), [2]);
    assert.equal(s.delivered, 2);
  });

  test('a message past a missing Seq is held back and reports the gap; the missing one releases both in order', () => {
    const s = new ChatSequencer(10);
    assert.deepEqual(s.offer(msg(12)), { deliver: [], gap: true });
    assert.deepEqual(s.offer(msg(12)), { deliver: [], gap: true }, 'a held duplicate is dropped too');
    assert.deepEqual(s.offer(msg(13)).deliver, []);
    const released = s.offer(msg(11));
    assert.deepEqual(released.deliver.map((m) => m.seq), [11, 12, 13]);
    assert.equal(released.gap, false);
    assert.equal(s.waiting, 0);
  });

  test('a refilled message closes the gap before it (no such Seq for this reader: withheld from them), releasing what was held after it', () => {
    const s = new ChatSequencer(10);
    assert.deepEqual(s.offer(msg(13)), { deliver: [], gap: true });
    const refilled = s.offer(msg(12), true);
    assert.deepEqual([refilled.deliver.map((m) => m.seq), refilled.gap, s.delivered], [[12, 13], false, 13]);
    assert.deepEqual(new ChatSequencer(10).offer(msg(12)), { deliver: [], gap: true }, 'a pushed one still waits for Seq 11');
  });

  test('messages at or before the starting Seq are ignored (the app already has them)', () => {
    const s = new ChatSequencer(5);
    assert.deepEqual(s.offer(msg(5)).deliver, []);
    assert.deepEqual(s.offer(msg(6)).deliver.map((m) => m.seq), [6]);
  });

  test('RecentKeys reports a key once, and forgets the oldest past its limit', () => {
    const k = new RecentKeys(2);
    assert.equal(k.first('a'), true);
    assert.equal(k.first('a'), false);
    k.first('b');
    k.first('c');
    assert.equal(k.first('a'), true, 'a was evicted');
  });

  test('pushed (PascalCase) and listed (camelCase) messages read the same', () => {
    const pushed = toChatMessage({ ChatId: 'c', MessageId: 'm', Seq: 3, SenderUserId: 'u', Kind: 'Text', SentAt: 't', EditedAt: null, Deleted: false, Body: 'hi' });
    const listed = toChatMessage({ id: 'm', chatId: 'c', seq: 3, senderUserId: 'u', kind: 'Text', body: 'hi', fileMeta: null, cardText: null, sentAt: 't', editedAt: null, deleted: false });
    assert.deepEqual(pushed, listed);
  });
});
