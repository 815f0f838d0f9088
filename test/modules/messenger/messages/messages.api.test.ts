import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';
import { waitFor } from '../../../support/wait.ts';
import { objectStoreEnv } from '../../../support/objectstore.ts';
import { PDF, uploaded } from '../files/support.ts';

type Chat = { id: string; lastSeq: number };
type Message = { id: string; seq: number; body: string | null; deleted: boolean; editedAt: string | null; cardText: string | null; fileMeta: unknown };
type Err = { code: string };
type Payload = Record<string, unknown>;


async function groupOf(m: MessengerApp, n: number) {
  const users = [];
  for (let i = 0; i < n; i++) users.push(await m.user());
  const chat = (await m.call<Chat>(users[0]!.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: users.slice(1).map((u) => u.id) })).body;
  // Strangers join as a message request; each accepts, so receipts reach the chat (docs/security.md, "Consent").
  for (const u of users.slice(1)) await m.accept(u.token, chat.id);
  return { users, chat, base: `/api/messenger/chats/${chat.id}` };
}

describe('messages: send, edit within 60 s, delete, list-messages, read receipts', () => {
  test('Seq is per chat, monotonic and gapless — concurrent senders and refused sends leave no hole', async () => {
    // Eight sends at once from each sender: past the per-user bound on requests in progress, which is not what this tests.
    const m = await messengerApp({ HTTP_MAX_CONCURRENT_REQUESTS_PER_USER: '0' });
    const { users, base } = await groupOf(m, 3);
    const other = await groupOf(m, 2);
    const sends = [];
    for (let i = 0; i < 24; i++) {
      const u = users[i % 3]!;
      sends.push(m.call<Message>(u.token, 'POST', `${base}/messages`, i % 6 === 5 ? { kind: 'Text', body: '   ' } : { kind: 'Text', body: `m${i}` }));
      if (i % 8 === 0) sends.push(m.call<Message>(other.users[0]!.token, 'POST', `${other.base}/messages`, { kind: 'Text', body: 'elsewhere' }));
    }
    const results = await Promise.all(sends);
    assert.equal(results.filter((r) => r.status === 400).length, 4, 'blank bodies refused');
    const list = await m.call<{ items: Message[]; lastSeq: number }>(users[0]!.token, 'GET', `${base}/messages?limit=500`);
    assert.deepEqual(list.body.items.map((x) => x.seq), Array.from({ length: 20 }, (_, i) => i + 1));
    assert.equal(list.body.lastSeq, 20);
    const elsewhere = await m.call<{ items: Message[] }>(other.users[0]!.token, 'GET', `${other.base}/messages`);
    assert.deepEqual(elsewhere.body.items.map((x) => x.seq), [1, 2, 3], 'each chat counts on its own');
  });

  test('sending publishes MessagePostedKafkaEvent through the outbox: recipients are the active participants but the sender, never the body', async () => {
    const m = await messengerApp();
    const { users, chat, base } = await groupOf(m, 3);
    await m.call(users[0]!.token, 'DELETE', `${base}/participants/${users[2]!.id}`);
    const sent = (await m.call<Message>(users[1]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'top secret text' })).body;
    const { rows } = await m.pool.query<{ topic: string; key: string; event_type: string; aggregate_id: string; payload: Payload }>(
      `select topic, key, event_type, aggregate_id, payload from platform.outbox where event_type = 'MessagePostedKafkaEvent'`,
    );
    assert.equal(rows.length, 1);
    const [row] = rows;
    assert.equal(row!.topic, 'pin.messenger.message-posted.v1');
    assert.equal(row!.key, chat.id);
    assert.deepEqual(row!.payload, {
      ChatId: chat.id,
      MessageId: sent.id,
      Seq: 1,
      SenderUserId: users[1]!.id,
      RecipientUserIds: [users[0]!.id],
      RequestUserIds: [],
      Kind: 'Text',
      SentAt: m.clock.now().toISOString(),
      MentionedUserIds: [],
      MutedUserIds: [],
      MentionsOnlyUserIds: [],
    });
    assert.doesNotMatch(JSON.stringify(row!.payload), /top secret/);
  });

  test("MessagePostedKafkaEvent names the recipients for whom the chat is a message request (RequestUserIds) until they accept", async () => {
    const m = await messengerApp();
    const [owner, asked, member] = [await m.user(), await m.user(), await m.user()];
    const chat = (await m.call<Chat>(owner.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [asked.id, member.id] })).body;
    await m.accept(member.token, chat.id);
    const send = () => m.call(owner.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'hi' });
    await send();
    await m.accept(asked.token, chat.id);
    await send();
    const { rows } = await m.pool.query<{ payload: { RecipientUserIds: string[]; RequestUserIds: string[] } }>(
      `select payload from platform.outbox where event_type = 'MessagePostedKafkaEvent' order by (payload->>'Seq')::int`,
    );
    assert.deepEqual(rows.map((r) => r.payload.RecipientUserIds), [[asked.id, member.id].sort(), [asked.id, member.id].sort()]);
    assert.deepEqual(rows.map((r) => r.payload.RequestUserIds), [[asked.id], []]);
  });

  test('a send that waited for a concurrent removal re-reads the membership: the removed user is not a recipient', async () => {
    const m = await messengerApp();
    const { users, chat, base } = await groupOf(m, 3);
    const removed = users[2]!;
    const admin = new pg.Client({ connectionString: m.database.url });
    await admin.connect();
    try {
      // A membership change holding the chat lock, as removeParticipant does.
      await admin.query('begin');
      await admin.query(`update messenger.chats set membership_version = membership_version + 1 where id = $1`, [chat.id]);
      await admin.query(`update messenger.chat_participants set status = 'Removed' where chat_id = $1 and user_id = $2`, [chat.id, removed.id]);
      const sending = m.call<Message>(users[1]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'racing' });
      await waitFor('the send to wait for the chat lock (its snapshot predates the removal)', async () => {
        const { rows } = await m.pool.query(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`);
        return rows.length > 0;
      });
      await admin.query('commit');
      assert.equal((await sending).status, 201);
    } finally {
      await admin.end();
    }
    const { rows } = await m.pool.query<{ payload: { RecipientUserIds: string[] } }>(`select payload from platform.outbox where event_type = 'MessagePostedKafkaEvent'`);
    assert.deepEqual(rows[0]!.payload.RecipientUserIds, [users[0]!.id]);
  });

  test('text, file and card messages: the body only reaches the chat group, as sent', async () => {
    const m = await messengerApp(objectStoreEnv());
    const { users, chat, base } = await groupOf(m, 2);
    const client = await m.connect(users[1]!.token, ALL_EVENTS);
    const upload = await uploaded(m, users[0]!.token, chat.id, PDF, { fileName: 'plan.pdf', contentType: 'application/pdf' });
    const fileMeta = { fileId: upload.fileId, fileName: 'plan.pdf', contentType: 'application/pdf', size: PDF.length };
    assert.equal((await m.call(users[0]!.token, 'POST', `${base}/messages`, { kind: 'File', fileId: upload.fileId })).status, 201);
    assert.equal((await m.call(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Card', cardText: 'Flat 3, 45 m²' })).status, 201);
    const mixed = await m.call<Err>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Card', body: 'x', cardText: 'y' });
    assert.deepEqual([mixed.status, mixed.body.code], [400, 'MSG_MESSAGE_INVALID']);
    await m.dispatch();
    await waitFor('both messages', () => ofEvent(client, 'message_received').length === 2);
    const [file, card] = ofEvent(client, 'message_received');
    assert.deepEqual(file!.FileMeta, fileMeta);
    assert.equal(card!.CardText, 'Flat 3, 45 m²');
  });

  test('UC-MSG-003: the sender edits within 60 s (message_edited); later edits get MSG_MESSAGE_EDIT_WINDOW_EXPIRED; others cannot edit', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const client = await m.connect(users[1]!.token, ALL_EVENTS);
    const msg = (await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'helo' })).body;
    m.clock.advance(60_000);
    const edited = await m.call<Message>(users[0]!.token, 'PATCH', `${base}/messages/${msg.id}`, { body: 'hello' });
    assert.equal(edited.status, 200);
    assert.equal(edited.body.body, 'hello');
    assert.equal(edited.body.editedAt, m.clock.now().toISOString());
    assert.equal((await m.call<Err>(users[1]!.token, 'PATCH', `${base}/messages/${msg.id}`, { body: 'mine' })).body.code, 'MSG_MESSAGE_NOT_SENDER');
    m.clock.advance(1);
    const late = await m.call<Err>(users[0]!.token, 'PATCH', `${base}/messages/${msg.id}`, { body: 'too late' });
    assert.deepEqual([late.status, late.body.code], [409, 'MSG_MESSAGE_EDIT_WINDOW_EXPIRED']);
    await m.dispatch();
    await waitFor('message_edited', () => ofEvent(client, 'message_edited').length === 1);
    assert.deepEqual([ofEvent(client, 'message_edited')[0]!.Body, ofEvent(client, 'message_edited')[0]!.Seq], ['hello', 1]);
  });

  test('delete erases the content but keeps the Seq as a tombstone in list-messages; message_deleted is pushed', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const client = await m.connect(users[1]!.token, ALL_EVENTS);
    const msg = (await m.call<Message>(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'oops' })).body;
    await m.call(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'next' });
    assert.equal((await m.call<Err>(users[1]!.token, 'DELETE', `${base}/messages/${msg.id}`)).body.code, 'MSG_MESSAGE_NOT_SENDER');
    assert.equal((await m.call(users[0]!.token, 'DELETE', `${base}/messages/${msg.id}`)).status, 204);
    assert.equal((await m.call(users[0]!.token, 'DELETE', `${base}/messages/${msg.id}`)).status, 204, 'deleting twice is a no-op');
    const list = (await m.call<{ items: Message[] }>(users[1]!.token, 'GET', `${base}/messages`)).body.items;
    assert.deepEqual(list.map((x) => [x.seq, x.deleted, x.body]), [[1, true, null], [2, false, 'next']]);
    const { rows } = await m.pool.query(`select body from messenger.messages where id = $1`, [msg.id]);
    assert.equal(rows[0].body, null, 'the content is gone from the database');
    assert.equal((await m.call<Err>(users[0]!.token, 'PATCH', `${base}/messages/${msg.id}`, { body: 'x' })).body.code, 'MSG_MESSAGE_DELETED');
    await m.dispatch();
    await waitFor('message_deleted', () => ofEvent(client, 'message_deleted').length === 1);
    assert.deepEqual(Object.keys(ofEvent(client, 'message_deleted')[0]!).sort(), ['ChatId', 'Cursor', 'DeletedAt', 'MessageId', 'Seq']);
    // The MessageReceived of the deleted message, delivered late, carries no body either.
    const received = ofEvent(client, 'message_received').find((p) => p.MessageId === msg.id);
    assert.equal(received?.Deleted, true);
    assert.equal(received && 'Body' in received, false);
  });

  test('list-messages pages by afterSeq and limit, in Seq order', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    for (let i = 1; i <= 7; i++) await m.call(users[i % 2]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: `m${i}` });
    const page = await m.call<{ items: Message[]; lastSeq: number }>(users[0]!.token, 'GET', `${base}/messages?afterSeq=2&limit=3`);
    assert.deepEqual(page.body.items.map((x) => [x.seq, x.body]), [[3, 'm3'], [4, 'm4'], [5, 'm5']]);
    assert.equal(page.body.lastSeq, 7);
    assert.deepEqual((await m.call<{ items: Message[] }>(users[0]!.token, 'GET', `${base}/messages?afterSeq=7`)).body.items, []);
    assert.equal((await m.call<Err>(users[0]!.token, 'GET', `${base}/messages?afterSeq=-1`)).status, 400);
  });

  test('read receipts move forward only, up to the last Seq, and are pushed as read_receipt_updated', async () => {
    const m = await messengerApp();
    const { users, chat, base } = await groupOf(m, 2);
    const client = await m.connect(users[0]!.token, ALL_EVENTS);
    for (let i = 1; i <= 3; i++) await m.call(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: `m${i}` });
    const read = (seq: number) => m.call<{ lastReadSeq: number }>(users[1]!.token, 'POST', `${base}/read`, { seq });
    assert.equal((await read(2)).body.lastReadSeq, 2);
    assert.equal((await read(1)).body.lastReadSeq, 2, 'never backwards');
    assert.equal((await read(99)).body.lastReadSeq, 3, 'capped at LastSeq');
    await m.dispatch();
    await waitFor('two receipts (2, then 3)', () => ofEvent(client, 'read_receipt_updated').length === 2);
    assert.deepEqual(ofEvent(client, 'read_receipt_updated').map((p) => [p.ChatId, p.UserId, p.LastReadSeq]), [
      [chat.id, users[1]!.id, 2],
      [chat.id, users[1]!.id, 3],
    ]);
  });

  test('the send queue is bounded: past its bound of waiting sends a send is 503 MSG_SEND_QUEUE_FULL with Retry-After', async () => {
    const m = await messengerApp({}, { sendQueueMaxWaiting: 1, sendConcurrency: 1 });
    const { users, chat, base } = await groupOf(m, 2);
    // Holding the chat row keeps the one send statement waiting, so the next send has to queue.
    const holder = await m.pool.connect();
    await holder.query('begin');
    await holder.query('select 1 from messenger.chats where id = $1 for update', [chat.id]);
    const send = (body: string) => m.app.inject({ method: 'POST', url: `${base}/messages`, headers: { authorization: `Bearer ${users[0]!.token}` }, payload: { kind: 'Text', body } });
    const inFlight = send('one');
    await waitFor('the first send waits for the chat lock', async () => {
      const { rows } = await m.pool.query("select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()");
      return rows[0].n > 0;
    });
    const queued = send('two');
    await new Promise((r) => setImmediate(r));
    const refused = await send('three');
    assert.equal(refused.statusCode, 503);
    assert.deepEqual(refused.json().code, 'MSG_SEND_QUEUE_FULL');
    assert.equal(refused.headers['retry-after'], '1');
    await holder.query('commit');
    holder.release();
    assert.deepEqual([(await inFlight).statusCode, (await queued).statusCode], [201, 201], 'the sends already taken still go through');
  });
});
