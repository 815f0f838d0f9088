import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createPush, type PushRow } from '../../../src/platform/push/index.ts';

/**
 * The push part's port: what modules register (carried and referenced kinds, the stream's group
 * spans and refusals) and how the part builds a row from the registrations, knowing no kind itself.
 */

const bob = randomUUID();
/** A frame as a carried kind's owner writes it (the notifications' status frame). */
const FRAME = { NotificationId: randomUUID(), Status: 'Failed', Version: 3 };

const row = (o: Partial<PushRow>): PushRow => ({
  id: randomUUID(),
  kind: 'NotificationStatusChanged',
  targetKind: 'User',
  chatId: null,
  targetUserId: bob,
  messageId: null,
  refId: null,
  sessionKind: null,
  seq: null,
  ...o,
});

function carrying() {
  const push = createPush();
  push.registerKinds({ owner: 'notifications', carried: ['NotificationStatusChanged'] });
  return push;
}

describe('the push port', () => {
  test('a carried frame is pushed to its one user exactly as stored, under its kind’s event name', () => {
    const built = carrying().kinds.build(row({ payload: FRAME }), undefined);
    assert.deepEqual(built, { ok: true, delivery: { sends: [{ group: `user:${bob}`, event: 'notification_status_changed', payload: FRAME }] } });
  });

  test('a carried row without its frame, or addressed to a chat, is quarantined as RTO_REF_NOT_FOUND', () => {
    const kinds = carrying().kinds;
    assert.deepEqual(kinds.build(row({ payload: null }), undefined), { ok: false, code: 'RTO_REF_NOT_FOUND' });
    assert.deepEqual(kinds.build(row({ targetKind: 'ChatGroup', targetUserId: null, chatId: randomUUID(), payload: FRAME }), undefined), { ok: false, code: 'RTO_REF_NOT_FOUND' });
  });

  test('a row of a kind no module registered is quarantined as RTO_KIND_NOT_REGISTERED', () => {
    assert.deepEqual(carrying().kinds.build(row({ kind: 'MessageReceived' }), undefined), { ok: false, code: 'RTO_KIND_NOT_REGISTERED' });
  });

  test('a kind is one owner’s: a second registration fails at start', () => {
    const push = carrying();
    assert.throws(() => push.registerKinds({ owner: 'messenger', carried: ['NotificationStatusChanged'] }), /registered by notifications and messenger/);
  });

  test('every registered refusal of a stream reader runs, in order, and the first to throw refuses', async () => {
    const push = createPush();
    const asked: string[] = [];
    push.registerKinds({ owner: 'a', carried: ['AKind'], refuseReader: async (_db, userId) => void asked.push(`a:${userId}`) });
    push.registerKinds({
      owner: 'b',
      carried: ['BKind'],
      refuseReader: async (_db, userId) => {
        asked.push(`b:${userId}`);
        throw new Error('refused by b');
      },
    });
    await assert.rejects(push.kinds.refuseReader({} as never, bob), /refused by b/);
    assert.deepEqual(asked, [`a:${bob}`, `b:${bob}`]);
  });
});
