import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ALL_EVENTS, messengerApp, type MessengerApp } from '../support/app.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * Idempotent sends: a client picks a clientMessageId once per message and sends it again on every
 * retry. A repeat from the same sender answers the stored message (200, same id and Seq) and writes
 * nothing — no row, no push intent, no MessagePosted; the id reused for other content is refused.
 */

type Message = { id: string; seq: number; body: string | null; clientMessageId: string | null };
type Err = { code: string; message: string };

async function groupOf(m: MessengerApp) {
  const users = [await m.user(), await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(users[0]!.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [users[1]!.id, users[2]!.id] })).body;
  return { users, chat, base: `/api/messenger/chats/${chat.id}` };
}

/** Messages, their push intents and their MessagePosted events: what a send writes. */
async function written(m: MessengerApp): Promise<{ messages: number; pushes: number; events: number }> {
  const { rows } = await m.pool.query<{ messages: number; pushes: number; events: number }>(
    `select (select count(*)::int from messenger.messages) as messages,
            (select count(*)::int from push.realtime_outbox where kind = 'MessageReceived') as pushes,
            (select count(*)::int from platform.outbox where event_type = 'MessagePostedKafkaEvent') as events`,
  );
  return rows[0]!;
}

describe('idempotent sends (clientMessageId)', () => {
  test('a repeat answers the stored message with 200 (same id and Seq) and writes no row, push intent or MessagePosted', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m);
    const clientMessageId = randomUUID();
    const first = await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', clientMessageId });
    assert.equal(first.status, 201);
    assert.equal(first.body.clientMessageId, clientMessageId);
    const before = await written(m);
    assert.deepEqual(before, { messages: 1, pushes: 1, events: 1 });
    const again = await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', clientMessageId });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    assert.deepEqual(await written(m), before);
    const next = await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'next', clientMessageId: randomUUID() });
    assert.equal(next.body.seq, 2, 'the repeat spent no Seq');
  });

  test('the same clientMessageId with other content, or in another chat, is refused 409 MSG_CLIENT_MESSAGE_ID_REUSED and writes nothing', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m);
    const other = await groupOf(m);
    const clientMessageId = randomUUID();
    await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', clientMessageId });
    const before = await written(m);
    for (const [url, payload] of [
      [`${base}/messages`, { kind: 'Text', body: 'hi!', clientMessageId }],
      [`${base}/messages`, { kind: 'Card', cardText: 'hi', clientMessageId }],
      [`/api/messenger/chats/${other.chat.id}/messages`, { kind: 'Text', body: 'hi', clientMessageId }],
    ] as const) {
      // users[0] is no member of the other chat: the reuse is what is reported, not the chat.
      const res = await m.call<Err>(users[0]!.token, 'POST', url, payload);
      assert.deepEqual([res.status, res.body.code], [409, 'MSG_CLIENT_MESSAGE_ID_REUSED'], JSON.stringify(payload));
    }
    assert.deepEqual(await written(m), before);
  });

  test('the id is unique per sender: another sender may use the same clientMessageId for their own message', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m);
    const clientMessageId = randomUUID();
    const a = await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', clientMessageId });
    const b = await m.call<Message>(users[1]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', clientMessageId });
    assert.deepEqual([a.status, b.status], [201, 201]);
    assert.notEqual(a.body.id, b.body.id);
  });

  for (const [name, tuning] of [
    ['sent together in one batch statement', {}],
    ['sent as two concurrent single statements (the second fails on the unique index and finds the stored row)', { sendBatchMax: 1 }],
  ] as const) {
    test(`of concurrent repeats, one answers 201 and the others 200 with the same message — ${name}`, async () => {
      const m = await messengerApp({}, tuning);
      const { users, base } = await groupOf(m);
      for (let round = 0; round < 5; round++) {
        const clientMessageId = randomUUID();
        const send = () => m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: `r${round}`, clientMessageId });
        // Other senders' messages in the same batches, so the repeats are judged beside real sends.
        const others = [1, 2].map((u) => m.call<Message>(users[u]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: `o${round}`, clientMessageId: randomUUID() }));
        const results = await Promise.all([send(), send(), send(), ...others]);
        const repeats = results.slice(0, 3);
        assert.deepEqual(repeats.map((r) => r.status).sort(), [200, 200, 201], `round ${round}`);
        assert.equal(new Set(repeats.map((r) => `${r.body.id}#${r.body.seq}`)).size, 1, 'every repeat answers the one stored message');
        assert.ok(results.slice(3).every((r) => r.status === 201));
      }
      const { rows } = await m.pool.query<{ seqs: number[] }>(`select array_agg(seq::int order by seq) as seqs from messenger.messages`);
      assert.deepEqual(rows[0]!.seqs, Array.from({ length: 15 }, (_, i) => i + 1), 'one message per clientMessageId, Seq gapless');
      assert.deepEqual(await written(m), { messages: 15, pushes: 15, events: 15 });
    });
  }

  test("message_received carries ClientMessageId, so the sender's other devices match their optimistic copy", async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m);
    const otherDevice = await m.connect(users[0]!.token, ALL_EVENTS);
    const recipient = await m.connect(users[1]!.token, ALL_EVENTS);
    const clientMessageId = randomUUID();
    const sent = (await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', clientMessageId })).body;
    await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'plain' });
    await m.dispatch();
    for (const client of [otherDevice, recipient]) {
      await waitFor('both messages', () => client.received.filter((r) => r.event === 'message_received').length === 2);
      const frames = client.received.filter((r) => r.event === 'message_received').map((r) => r.payload as Record<string, unknown>);
      assert.deepEqual(
        frames.map((f) => [f.MessageId, f.ClientMessageId]),
        [
          [sent.id, clientMessageId],
          [frames[1]!.MessageId, null],
        ],
      );
    }
    await Promise.all([otherDevice.connection.stop(), recipient.connection.stop()]);
  });

  test('a malformed clientMessageId is refused 400 and writes nothing', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m);
    for (const clientMessageId of ['not-a-uuid', '', 42, null]) {
      const res = await m.call<Err>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi', clientMessageId });
      assert.equal(res.status, 400, String(clientMessageId));
      assert.equal(typeof res.body.code, 'string');
    }
    assert.equal((await written(m)).messages, 0);
  });
});
