import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import pg from 'pg';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { createSendQueue, sendMessage } from '../../../../src/modules/messenger/messages/send.ts';
import type { MessagesContext } from '../../../../src/modules/messenger/messages/context.ts';
import { trySendBatch, type BatchSend, type BatchSendOutcome } from '../../../../src/modules/messenger/messages/send-batch.ts';
import { createDb } from '../../../../src/platform/db/index.ts';
import { createTestDatabase } from '../../../support/db.ts';
import { T0 } from '../support/dispatch.ts';
import { logCapture } from '../../../support/logs.ts';
import { waitFor } from '../../../support/wait.ts';
import { messengerPush } from '../support/push.ts';

/** The push part's writer of the sends' MessageReceived rows, with the messenger's kinds registered. */
const push = messengerPush();

/**
 * Sends written together in one statement (send-batch.ts) against sends written one by one
 * (the single statement): the same outcomes and exactly the same rows in messages, realtime_outbox,
 * platform.outbox and chats; a batch that fails falls back to one by one; a chat whose membership
 * changed while the batch waited is sent again on a fresh snapshot.
 */

const U = Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'x'].map((n) => [n, newId()])) as Record<
  'a' | 'b' | 'c' | 'd' | 'e' | 'f' | 'g' | 'h' | 'x',
  string
>;
const CHAT = { G: newId(), D: newId(), D2: newId(), D3: newId(), E: newId(), F: newId(), none: newId() };
const names = new Map<string, string>([...Object.entries(U), ...Object.entries(CHAT)].map(([k, v]) => [v, k]));

/**
 * G: a, b Active, c Removed. D: Direct a–d, d blocked a (a's message is withheld from d, d's refused). D2: Direct b–e, an Unblocked entry.
 * D3: Direct b–h. E: e alone. F: g alone. g and h are inactive in the user replica (blocked or archived).
 */
async function seed(pool: pg.Pool): Promise<void> {
  await pool.query(
    `insert into messenger.users (id, first_name, last_name, phone_number, is_active, identity_user_version, created_at, updated_at)
     select u, 'Иван', 'Петров', '+7926' || lpad(o::text, 7, '0'), true, 1, $2, $2 from unnest($1::uuid[]) with ordinality t(u, o)`,
    [Object.values(U), T0],
  );
  await pool.query(`update messenger.users set is_active = false where id = any($1::uuid[])`, [[U.g, U.h]]);
  const chat = (id: string, kind: string, by: string, key: string | null) =>
    pool.query(`insert into messenger.chats (id, kind, title, direct_key, created_by_user_id, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $6)`, [
      id,
      kind,
      kind === 'Group' ? 'T' : null,
      key,
      by,
      T0,
    ]);
  const member = (chatId: string, userId: string, status = 'Active') =>
    pool.query(
      `insert into messenger.chat_participants (id, chat_id, user_id, role, status, joined_at, updated_at) values ($1, $2, $3, 'Member', $4, $5, $5)`,
      [newId(), chatId, userId, status, T0],
    );
  const block = (owner: string, blocked: string, status: string) =>
    pool.query(`insert into messenger.blacklist_entries (id, owner_user_id, blocked_user_id, status, created_at, updated_at) values ($1, $2, $3, $4, $5, $5)`, [
      newId(),
      owner,
      blocked,
      status,
      T0,
    ]);
  await chat(CHAT.G, 'Group', U.a, null);
  await chat(CHAT.D, 'Direct', U.a, `${U.a}:${U.d}`);
  await chat(CHAT.D2, 'Direct', U.b, `${U.b}:${U.e}`);
  await chat(CHAT.E, 'Group', U.e, null);
  await chat(CHAT.D3, 'Direct', U.b, `${U.b}:${U.h}`);
  await chat(CHAT.F, 'Group', U.g, null);
  for (const [c, u, s] of [
    [CHAT.G, U.a],
    [CHAT.G, U.b],
    [CHAT.G, U.c, 'Removed'],
    [CHAT.D, U.a],
    [CHAT.D, U.d],
    [CHAT.D2, U.b],
    [CHAT.D2, U.e],
    [CHAT.E, U.e],
    [CHAT.F, U.g],
    [CHAT.D3, U.b],
    [CHAT.D3, U.h],
  ] as [string, string, string?][])
    await member(c, u, s);
  await block(U.d, U.a, 'Blocked');
  await block(U.e, U.b, 'Unblocked');
  // Every participation above is pending (a message request) but b's in G, accepted before.
  await pool.query(`update messenger.chat_participants set accepted_at = $3 where chat_id = $1 and user_id = $2`, [CHAT.G, U.b, T0]);
  // Notification levels the events carry: b hears of G only when mentioned, e muted D2.
  await pool.query(`update messenger.chat_participants set notification_level = 'mentions' where chat_id = $1 and user_id = $2`, [CHAT.G, U.b]);
  await pool.query(`update messenger.chat_participants set notification_level = 'off' where chat_id = $1 and user_id = $2`, [CHAT.D2, U.e]);
}

/** The parent a reply names (the statements store it as given: sendMessage judges it before). */
const PARENT = newId();

const fileMeta = { fileId: 'f-1', fileName: 'plan.pdf', contentType: 'application/pdf', size: 1024 };
const SENDS: BatchSend[] = [
  { senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Text', body: 'one' }, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
  { senderUserId: U.b, chatId: CHAT.G, content: { kind: 'File', fileMeta } },
  { senderUserId: U.x, chatId: CHAT.G, content: { kind: 'Text', body: 'not a member' } },
  { senderUserId: U.a, chatId: CHAT.D, content: { kind: 'Text', body: 'blocked by d' } },
  { senderUserId: U.d, chatId: CHAT.D, content: { kind: 'Text', body: 'd blocked a' } },
  { senderUserId: U.b, chatId: CHAT.D2, content: { kind: 'Text', body: 'unblocked is fine' } },
  { senderUserId: U.e, chatId: CHAT.E, content: { kind: 'Card', cardText: 'Flat 3, 45 m²' } },
  { senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Card', cardText: 'three', replyToMessageId: PARENT, mentionedUserIds: [U.b] } },
  { senderUserId: U.c, chatId: CHAT.G, content: { kind: 'Text', body: 'removed' } },
  { senderUserId: U.a, chatId: CHAT.none, content: { kind: 'Text', body: 'no such chat' } },
  { senderUserId: U.e, chatId: CHAT.D2, content: { kind: 'Text', body: 'two in D2' }, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
  { senderUserId: U.g, chatId: CHAT.F, content: { kind: 'Text', body: 'inactive sender' } },
  { senderUserId: U.b, chatId: CHAT.D3, content: { kind: 'Text', body: 'to an inactive user' } },
];

/** Outcomes without the generated message ids. */
const outcomesOf = (outs: BatchSendOutcome[]) =>
  outs.map((o) => ({
    member: o.member,
    blocked: o.blocked,
    senderInactive: o.senderInactive,
    recipientInactive: o.recipientInactive,
    message: o.message && { ...o.message, id: undefined, chatId: names.get(o.message.chatId) },
  }));

const verdictOf = (o: BatchSendOutcome): string =>
  o.message
    ? `${names.get(o.message.chatId)}#${o.message.seq}`
    : !o.member
      ? 'not found'
      : o.senderInactive
        ? 'sender inactive'
        : o.blocked
          ? 'blocked'
          : o.recipientInactive
            ? 'recipient inactive'
            : 'retry';

/** Everything the sends wrote, with ids turned into names and message ids into (chat, Seq). */
async function written(pool: pg.Pool): Promise<unknown> {
  const q = async (text: string) => (await pool.query(text)).rows;
  const seqOf = new Map((await q(`select id, chat_id, seq::int from messenger.messages`)).map((r) => [r.id as string, `${names.get(r.chat_id)}#${r.seq}`]));
  const named = (v: unknown): unknown =>
    typeof v === 'string' ? (names.get(v) ?? seqOf.get(v) ?? v) : Array.isArray(v) ? v.map(named) : v && typeof v === 'object' && !(v instanceof Date) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, named(x)])) : v;
  return named({
    messages: await q(`select chat_id, seq::int, sender_user_id, kind, body, file_meta, card_text, sent_at, edited_at, deleted_at, withheld_from,
                        reply_to_message_id, mentioned_user_ids from messenger.messages order by chat_id, seq`),
    pushes: await q(
      `select r.kind, r.target_kind, r.chat_id, r.target_user_id, r.message_id, r.ref_id, r.session_kind, r.seq::int, r.status, r.attempts,
              r.next_attempt_at, r.last_error, r.created_at, r.updated_at, r.row_version, r.traceparent
         from push.realtime_outbox r order by r.chat_id, r.seq`,
    ),
    events: await q(
      `select topic, key, event_type, contract_version, aggregate_type, aggregate_id, occurred_at, correlation_id, payload, traceparent, published_at, attempts, last_error
         from platform.outbox order by key, (payload->>'Seq')::int`,
    ),
    chats: await q(`select id, last_seq::int, membership_version, updated_at from messenger.chats order by id`),
    // A first send accepts the sender's pending participation (a message request to them); an accepted one is left alone.
    participants: await q(`select chat_id, user_id, status, accepted_at, updated_at from messenger.chat_participants order by chat_id, user_id`),
  });
}

async function seededDatabase() {
  const database = await createTestDatabase();
  await seed(database.pool);
  return database;
}

/**
 * A one-connection pool to the test's PostgreSQL through a TCP proxy that, once armed, drops the
 * connection in place of the next ReadyForQuery: the statement has committed and its rows were
 * answered, but the answer never completes (the connection's start-up passes before arming).
 */
async function answerCuttingProxy(databaseUrl: string) {
  let armed = false;
  let cut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(new URL(databaseUrl).port), '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('error', () => {}).pipe(upstream);
    let pending = Buffer.alloc(0);
    upstream.on('error', () => {}).on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      // Backend messages: a type byte, then a length that counts itself.
      while (pending.length >= 5 && pending.length >= 1 + pending.readUInt32BE(1)) {
        const message = pending.subarray(0, 1 + pending.readUInt32BE(1));
        pending = pending.subarray(message.length);
        if (armed && message[0] === 0x5a) {
          armed = false;
          cut = true;
          client.destroy();
          upstream.destroy();
          return;
        }
        client.write(message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.port = String((server.address() as net.AddressInfo).port);
  const pool = new pg.Pool({ connectionString: url.toString(), max: 1 });
  pool.on('error', () => {});
  await pool.query('select 1');
  return {
    pool,
    arm: () => void (armed = true),
    cut: () => cut,
    async close() {
      await pool.end();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The process's send queue over that pool, counting the dispatcher wakes it asks for. */
async function queueThroughCuttingProxy(databaseUrl: string) {
  const proxy = await answerCuttingProxy(databaseUrl);
  let wakes = 0;
  const queue = createSendQueue(
    { push, db: createDb(proxy.pool), clock: new ManualClock(T0), log: createLogger('silent'), onCommitted: () => wakes++ },
    { maxBatch: 64, maxInFlight: 1 },
  );
  return { queue, proxy, woken: () => wakes };
}

const bodyCounts = async (pool: pg.Pool) =>
  (await pool.query<{ body: string; n: number }>(`select body, count(*)::int as n from messenger.messages group by body order by body`)).rows;

describe('message sends written together (one statement) vs one by one', () => {
  test('one statement for many sends gives the same outcomes and writes exactly the rows that one-by-one sends write', async () => {
    const clock = new ManualClock(T0);
    const single = await seededDatabase();
    const oneByOne = createSendQueue({ push, db: single.db, clock, log: createLogger('silent') }, { maxBatch: 1, maxInFlight: 1 });
    const singleOutcomes: BatchSendOutcome[] = [];
    for (const s of SENDS) singleOutcomes.push(await oneByOne.submit(s));

    const batched = await seededDatabase();
    const batchOutcomes = await trySendBatch({ db: batched.db, push }, SENDS, clock.now());

    assert.deepEqual(outcomesOf(batchOutcomes), outcomesOf(singleOutcomes));
    assert.deepEqual(batchOutcomes.map(verdictOf), [
      'G#1',
      'G#2',
      'not found',
      'D#1',
      'blocked',
      'D2#1',
      'E#1',
      'G#3',
      'not found',
      'not found',
      'D2#2',
      'sender inactive',
      'recipient inactive',
    ]);
    assert.deepEqual(await written(batched.pool), await written(single.pool));
    // The events carry the mentions and the recipients' levels (the same both ways, as compared above).
    const levels = (await batched.pool.query<{ p: Record<string, unknown> }>(
      `select payload as p from platform.outbox where payload->>'ChatId' = any($1::text[]) order by key, (payload->>'Seq')::int`, [[CHAT.G, CHAT.D2]],
    )).rows.map(({ p }) => [names.get(String(p.ChatId)), p.Seq, p.MentionedUserIds, p.MutedUserIds, p.MentionsOnlyUserIds]);
    assert.deepEqual(levels.sort((x, y) => String(x[0]).localeCompare(String(y[0])) || Number(x[1]) - Number(y[1])), [
      ['D2', 1, [], [U.e], []],
      ['D2', 2, [], [], []],
      ['G', 1, [], [], [U.b]],
      ['G', 2, [], [], []],
      ['G', 3, [U.b], [], [U.b]],
    ]);
  });

  test('concurrent sends through the queue go in one statement and answer each caller with its own message', async () => {
    const database = await seededDatabase();
    let statements = 0;
    const counted = new Proxy(database.pool, {
      get: (target, key) => (key === 'query' ? (...args: Parameters<pg.Pool['query']>) => (statements++, target.query(...args)) : Reflect.get(target, key)),
    });
    const queue = createSendQueue({ push, db: createDb(counted), clock: new ManualClock(T0), log: createLogger('silent') }, { maxBatch: 64, maxInFlight: 1 });
    const sends = Array.from({ length: 12 }, (_, i) => ({ senderUserId: i % 2 ? U.a : U.b, chatId: CHAT.G, content: { kind: 'Text' as const, body: `m${i}` } }));
    const outs = await Promise.all(sends.map((s) => queue.submit(s)));
    assert.deepEqual(
      outs.map((o) => o.message?.body),
      sends.map((s) => s.content.body),
    );
    assert.deepEqual(outs.map((o) => o.message?.seq).sort((x, y) => x! - y!), Array.from({ length: 12 }, (_, i) => i + 1));
    // In input order within the chat: the queue keeps arrival order, the statement numbers in it.
    assert.deepEqual(
      outs.map((o) => o.message?.seq),
      Array.from({ length: 12 }, (_, i) => i + 1),
    );
    assert.equal(statements, 1);
  });

  test('a batch whose statement fails is sent one by one: the good sends land, the bad one fails alone', async () => {
    const database = await seededDatabase();
    const logs = logCapture('warn');
    const queue = createSendQueue({ push, db: database.db, clock: new ManualClock(T0), log: logs.log }, { maxBatch: 64, maxInFlight: 1 });
    // PostgreSQL refuses NUL in text: the whole statement fails, as any unexpected error would.
    const bad = { senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Text' as const, body: 'nul \u0000 inside' } };
    const results = await Promise.allSettled([
      queue.submit({ senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Text', body: 'before' } }),
      queue.submit(bad),
      queue.submit({ senderUserId: U.e, chatId: CHAT.E, content: { kind: 'Text', body: 'elsewhere' } }),
    ]);
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? `${names.get(r.value.message!.chatId)}#${r.value.message!.seq}` : 'failed')),
      ['G#1', 'failed', 'E#1'],
    );
    assert.match(logs.text(), /message send batch failed; sending one by one/);
    assert.doesNotMatch(logs.text(), /Failed query|insert into|before|elsewhere/, "the driver's reason is logged, not drizzle's text with every body");
    const { rows } = await database.pool.query(`select count(*)::int as n from push.realtime_outbox`);
    assert.equal(rows[0].n, 2, 'one push intent per landed message, none for the failed one');
  });

  test('a batch whose connection is lost after its commit fails its sends instead of writing them again', async () => {
    const database = await seededDatabase();
    const { queue, proxy, woken } = await queueThroughCuttingProxy(database.url);
    try {
      proxy.arm();
      const results = await Promise.allSettled([
        queue.submit({ senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Text', body: 'lost answer 1' } }),
        queue.submit({ senderUserId: U.b, chatId: CHAT.G, content: { kind: 'Text', body: 'lost answer 2' } }),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['rejected', 'rejected'],
        'the commit is unknown to the sender: its sends fail rather than run again',
      );
      assert.equal(proxy.cut(), true, 'the proxy cut the connection at the ReadyForQuery after the batch');
      assert.deepEqual(await bodyCounts(database.pool), [
        { body: 'lost answer 1', n: 1 },
        { body: 'lost answer 2', n: 1 },
      ]);
      assert.equal(woken(), 1, 'the dispatcher is woken: the rows may be committed');
    } finally {
      await proxy.close();
    }
  });

  test('a single send whose connection is lost after its commit fails, is stored once and wakes the dispatcher', async () => {
    const database = await seededDatabase();
    const { queue, proxy, woken } = await queueThroughCuttingProxy(database.url);
    try {
      proxy.arm();
      await assert.rejects(queue.submit({ senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Text', body: 'lost answer' } }));
      assert.equal(proxy.cut(), true);
      assert.deepEqual(await bodyCounts(database.pool), [{ body: 'lost answer', n: 1 }]);
      assert.equal(woken(), 1, 'the dispatcher is woken: the row may be committed');
    } finally {
      await proxy.close();
    }
  });

  test('sends that waited for a membership change are sent again on a fresh snapshot; the others of the batch land at once', async () => {
    const database = await seededDatabase();
    await database.pool.query(
      `insert into messenger.chat_participants (id, chat_id, user_id, role, status, joined_at, updated_at) values ($1, $2, $3, 'Member', 'Active', $4, $4)`,
      [newId(), CHAT.G, U.f, T0],
    );
    const queue = createSendQueue({ push, db: database.db, clock: new ManualClock(T0), log: createLogger('silent') }, { maxBatch: 64, maxInFlight: 1 });
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      // A membership change holding G's lock, as removeParticipant does.
      await admin.query('begin');
      await admin.query(`update messenger.chats set membership_version = membership_version + 1 where id = $1`, [CHAT.G]);
      await admin.query(`update messenger.chat_participants set status = 'Removed' where chat_id = $1 and user_id = $2`, [CHAT.G, U.f]);
      // sendMessage is what sends again when the statement reports a membership change.
      const ctx = { sends: queue } as unknown as MessagesContext;
      const send = (userId: string, chatId: string, body: string) => sendMessage(ctx, { userId, admin: false }, chatId, { kind: 'Text', body }).then((r) => r.message);
      const sending = Promise.all([send(U.a, CHAT.G, 'g1'), send(U.e, CHAT.E, 'e1'), send(U.b, CHAT.G, 'g2')]);
      await waitFor('the batch to wait for G (its snapshot predates the removal)', async () => {
        const { rows } = await database.pool.query(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`);
        return rows.length > 0;
      });
      await admin.query('commit');
      const outs = await sending;
      assert.deepEqual(
        outs.map((o) => `${names.get(o.chatId)}#${o.seq}`),
        ['G#1', 'E#1', 'G#2'],
      );
    } finally {
      await admin.end();
    }
    const { rows } = await database.pool.query<{ key: string; payload: { RecipientUserIds: string[]; Seq: number } }>(
      `select key, payload from platform.outbox where key = $1 order by (payload->>'Seq')::int`,
      [CHAT.G],
    );
    assert.deepEqual(
      rows.map((r) => r.payload.RecipientUserIds.map((u) => names.get(u))),
      [['b'], ['a']],
      'the removed participant is no recipient',
    );
  });

  test('batches over the same chats in opposite orders never deadlock: chats are locked in id order', async () => {
    const database = await seededDatabase();
    const chats = [CHAT.G, CHAT.E, CHAT.D2];
    const sender = { [CHAT.G]: U.a, [CHAT.E]: U.e, [CHAT.D2]: U.b };
    const sendsTo = (order: string[]) => order.map((chatId) => ({ senderUserId: sender[chatId]!, chatId, content: { kind: 'Text' as const, body: 'x' } }));
    for (let round = 0; round < 15; round++) {
      const outs = await Promise.all([
        trySendBatch({ db: database.db, push }, sendsTo(chats), T0),
        trySendBatch({ db: database.db, push }, sendsTo([...chats].reverse()), T0),
      ]);
      assert.ok(outs.flat().every((o) => o.message !== null));
    }
    const { rows } = await database.pool.query<{ id: string; last_seq: number }>(`select id, last_seq::int from messenger.chats where id = any($1)`, [chats]);
    assert.deepEqual(
      rows.map((r) => r.last_seq),
      [30, 30, 30],
    );
  });

  test('each statement that committed messages wakes the dispatcher in this process once; refused sends wake nothing', async () => {
    const database = await seededDatabase();
    let wakes = 0;
    const queue = createSendQueue(
      { push, db: database.db, clock: new ManualClock(T0), log: createLogger('silent'), onCommitted: () => wakes++ },
      { maxBatch: 64, maxInFlight: 1 },
    );
    await queue.submit({ senderUserId: U.x, chatId: CHAT.G, content: { kind: 'Text', body: 'not a member' } });
    assert.equal(wakes, 0);
    await queue.submit({ senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Text', body: 'alone' } });
    assert.equal(wakes, 1);
    await Promise.all([
      queue.submit({ senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Text', body: 'together 1' } }),
      queue.submit({ senderUserId: U.e, chatId: CHAT.E, content: { kind: 'Text', body: 'together 2' } }),
    ]);
    assert.equal(wakes, 2, 'one statement, one wake');
  });

  test("a send's NOTIFY to the dispatcher carries the runner's payload, alone and in a batch, so this replica does not wake twice", async () => {
    const database = await seededDatabase();
    const observer = new pg.Client({ connectionString: database.url });
    await observer.connect();
    const payloads: string[] = [];
    observer.on('notification', (n) => payloads.push(n.payload ?? ''));
    await observer.query('listen realtime_outbox');
    try {
      const queue = createSendQueue(
        { push, db: database.db, clock: new ManualClock(T0), log: createLogger('silent'), wakePayload: () => 'runner:own' },
        { maxBatch: 64, maxInFlight: 1 },
      );
      await queue.submit({ senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Text', body: 'alone' } });
      await Promise.all([
        queue.submit({ senderUserId: U.a, chatId: CHAT.G, content: { kind: 'Text', body: 'together 1' } }),
        queue.submit({ senderUserId: U.e, chatId: CHAT.E, content: { kind: 'Text', body: 'together 2' } }),
      ]);
      await waitFor('both statements to notify', () => payloads.length === 2);
      assert.deepEqual(payloads, ['runner:own', 'runner:own']);
    } finally {
      await observer.end();
    }
  });
});
