import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { createDb } from '../../../../src/platform/db/index.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { createMediaJoinMinter } from '../../../../src/modules/messenger/calls/media-join.ts';
import { createRealtimeMetrics } from '../../../../src/platform/push/metrics.ts';
import { claimDue, recordOutcomes } from '../../../../src/modules/messenger/realtime-dispatch/claim.ts';
import type { MessengerPushKind } from '../../../../src/modules/messenger/model/push-kinds.ts';
import { newId } from '../../../../src/platform/time.ts';
import { MEDIA_SECRET, TURN_SECRET, T0, dispatchEnv, messengerDispatchJob, insertChat, insertMessage, insertOutbox, outboxRow, seedSettings, uid, type DispatchEnv } from '../support/dispatch.ts';

/**
 * While the first push is under way, another send of message `later` commits its outbox row (its
 * NOTIFY is a wake); returns the id of that row once it exists.
 */
function commitDuringFirstPush(env: DispatchEnv, chatId: string, later: string): () => string {
  let second: string | undefined;
  const hub = env.hubRef.current;
  env.hubRef.current = {
    ...hub,
    send: async (group, event, payload) => {
      second ??= await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: later, seq: 2 });
      await hub.send(group, event, payload);
    },
  };
  return () => second!;
}

/** What the dispatcher does per batch beyond the seed's table: fewer round trips, and runs that go on when woken. */
describe('RealtimeDispatchJob: round trips and wakes', () => {
  test('a wake during a batch makes the run claim again: a row committed meanwhile goes out in the same run', async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 2 });
    const first = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: await insertMessage(env.pool, chatId, 1, alice), seq: 1 });
    const later = await insertMessage(env.pool, chatId, 2, bob);
    const second = commitDuringFirstPush(env, chatId, later);
    let wakes = 1;
    const counts = await env.dispatcher.runOnce(env.ctx({ woken: () => wakes-- > 0 }));
    assert.equal(counts.claimed, 2);
    assert.equal(counts.dispatched, 2);
    assert.deepEqual(
      env.sends.map((s) => s.payload.Seq),
      [1, 2],
    );
    assert.equal((await outboxRow(env.pool, first)).status, 'Done');
    assert.equal((await outboxRow(env.pool, second())).status, 'Done');
  });

  test('without a wake a batch that is not full ends the run, as the seed says; the later row waits for its own run', async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 2 });
    await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: await insertMessage(env.pool, chatId, 1, alice), seq: 1 });
    const later = await insertMessage(env.pool, chatId, 2, bob);
    const second = commitDuringFirstPush(env, chatId, later);
    const counts = await env.dispatcher.runOnce(env.ctx({ woken: () => false }));
    assert.equal(counts.dispatched, 1);
    assert.equal((await outboxRow(env.pool, second())).status, 'Pending');
    assert.equal((await env.run()).dispatched, 1);
  });

  test('message rows: the claim reads their messages itself, so the claim is the only statement before the push', async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 3 });
    for (const seq of [1, 2, 3]) await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: await insertMessage(env.pool, chatId, seq, alice, `body ${seq}`), seq });
    let statements = 0;
    const counted = new Proxy(env.pool, {
      get: (target, key) => (key === 'query' ? (...args: Parameters<pg.Pool['query']>) => (statements++, target.query(...args)) : Reflect.get(target, key)),
    });
    const statementsAtPush: number[] = [];
    const pushed: unknown[] = [];
    const dispatcher = messengerDispatchJob({
      db: createDb(counted),
      hub: {
        send: async (_group, _event, payload) => {
          statementsAtPush.push(statements);
          pushed.push(payload);
        },
        addUserToGroup: async () => {},
        removeUserFromGroup: async () => {},
        disconnectUser: async () => {},
      },
      metrics: createRealtimeMetrics(new Registry(), env.db),
      mintJoin: createMediaJoinMinter({ tokenSecret: MEDIA_SECRET, tokenTtlSeconds: 300, turnUrls: ['turn:x'], turnSecret: TURN_SECRET, turnTtlSeconds: 60 }, env.clock),
      settings: seedSettings(),
    });
    const counts = await dispatcher.runOnce(env.ctx({ log: createLogger('silent') }));
    assert.equal(counts.dispatched, 3);
    assert.deepEqual(statementsAtPush, [1, 1, 1]);
    assert.deepEqual(
      pushed.map((p) => (p as { Body: string; Seq: number; SentAt: string }).Body),
      ['body 1', 'body 2', 'body 3'],
    );
    assert.equal((pushed[0] as { SentAt: string }).SentAt, T0.toISOString());
  });

  test('push order (the claim hands out stream positions in it): id order, except each chat’s new messages go out in Seq order', async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [uid(), uid()];
    const a = await insertChat(env.pool, [alice, bob], { lastSeq: 6 });
    const b = await insertChat(env.pool, [alice, bob], { lastSeq: 2 });
    const tags = new Map<string, string>();
    const row = async (tag: string, kind: MessengerPushKind, chatId: string, seq: number | null) =>
      tags.set(await insertOutbox(env.pool, { kind, chatId, seq, ...(kind === 'ChatUpdated' ? { refId: newId() } : {}) }), tag);
    await row('a6', 'MessageReceived', a, 6);
    await row('upd', 'ChatUpdated', a, null);
    await row('b2', 'MessageReceived', b, 2);
    await row('a5', 'MessageReceived', a, 5);
    await row('edit', 'MessageEdited', a, 1);
    await row('b1', 'MessageReceived', b, 1);
    const rows = await claimDue(env.db, { now: env.clock.now(), limit: 10, maxAttempts: 8, delaysMs: [1000], jitter: 0 });
    assert.deepEqual(rows.map((r) => tags.get(r.id)), ['a5', 'upd', 'b1', 'a6', 'edit', 'b2']);
    const positions = rows.map((r) => r.position!);
    assert.deepEqual(positions, [...positions].sort((x, y) => x - y), 'positions ascend in push order');
    assert.equal(new Set(positions).size, 6);
  });

  test('the claim carries the message of a message row, null when it is gone, and nothing for other kinds', async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 1 });
    const messageId = await insertMessage(env.pool, chatId, 1, alice, 'kept');
    const present = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId, seq: 1 });
    const gone = await insertOutbox(env.pool, { kind: 'MessageDeleted', chatId, messageId: newId(), seq: 9 });
    const other = await insertOutbox(env.pool, { kind: 'ContactRemoved', targetKind: 'User', targetUserId: bob, refId: newId() });
    const rows = await claimDue(env.db, { now: env.clock.now(), limit: 10, maxAttempts: 8, delaysMs: [1000], jitter: 0 });
    const byId = new Map(rows.map((r) => [r.id, r]));
    assert.deepEqual(byId.get(present)!.message, {
      id: messageId,
      chatId,
      seq: 1,
      senderUserId: alice,
      kind: 'Text',
      body: 'kept',
      fileMeta: null,
      cardText: null,
      sentAt: T0,
      editedAt: null,
      deletedAt: null,
      clientMessageId: null,
      mentionedUserIds: [],
      // The parent's id only: its preview is read for the whole batch when the refs load (refs.ts).
      replyToMessageId: null,
    });
    assert.equal(byId.get(gone)!.message, null);
    assert.equal('message' in byId.get(other)!, false);
  });

  test("a batch's outcomes are recorded while the next batch is claimed and pushed, and that claim never takes the batch's rows", async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 6 });
    const ids: string[] = [];
    for (let seq = 1; seq <= 6; seq++) ids.push(await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: await insertMessage(env.pool, chatId, seq, alice), seq }));
    // Outcome statements are slow and the clock runs fast with a 1 ms backoff: a claimed row is due
    // again long before its outcome lands, so only the claim's exclusion keeps it from a second claim.
    const order: string[] = [];
    const slow = new Proxy(env.pool, {
      get: (target, key) =>
        key === 'query'
          ? async (...args: Parameters<pg.Pool['query']>) => {
              const text = String(typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text);
              const what = text.includes('realtime_record_outcomes') ? 'outcome' : text.includes('for update skip locked') ? 'claim' : 'other';
              order.push(`${what}:start`);
              if (what === 'outcome') await new Promise((r) => setTimeout(r, 150));
              try {
                return await (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
              } finally {
                order.push(`${what}:end`);
              }
            }
          : Reflect.get(target, key),
    });
    const pushes: number[] = [];
    let t = T0.getTime();
    const dispatcher = messengerDispatchJob({
      db: createDb(slow),
      hub: { send: async (_g, _e, p) => void pushes.push((p as { Seq: number }).Seq), addUserToGroup: async () => {}, removeUserFromGroup: async () => {}, disconnectUser: async () => {} },
      metrics: createRealtimeMetrics(new Registry(), env.db),
      mintJoin: createMediaJoinMinter({ tokenSecret: MEDIA_SECRET, tokenTtlSeconds: 300, turnUrls: ['turn:x'], turnSecret: TURN_SECRET, turnTtlSeconds: 60 }, env.clock),
      settings: seedSettings({ batchSize: 2, backoff: { baseMs: 1, factor: 1, capMs: 1, jitter: 0 } }),
    });
    const counts = await dispatcher.runOnce(env.ctx({ log: createLogger('silent'), now: () => new Date((t += 1000)) }));
    assert.deepEqual(pushes, [1, 2, 3, 4, 5, 6], 'each row pushed once, in order');
    assert.deepEqual({ claimed: counts.claimed, dispatched: counts.dispatched, overtaken: counts.overtaken }, { claimed: 6, dispatched: 6, overtaken: 0 });
    for (const id of ids) assert.deepEqual([(await outboxRow(env.pool, id)).status, (await outboxRow(env.pool, id)).attempts], ['Done', 1]);
    // The second claim started before the first batch's outcome had landed.
    const firstOutcomeEnd = order.indexOf('outcome:end');
    const secondClaimStart = order.indexOf('claim:start', order.indexOf('claim:start') + 1);
    assert.ok(secondClaimStart < firstOutcomeEnd, order.join(' '));
  });

  test('an empty claim with a wake pending claims again: the run goes on while commits keep waking it', async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 1 });
    const messageId = await insertMessage(env.pool, chatId, 1, alice);
    // Not due at the first claim; due at the second (the clock moves 10 s per read).
    const row = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId, seq: 1, nextAttemptAt: new Date(T0.getTime() + 5000) });
    let t = T0.getTime() - 10_000;
    let wakes = 1;
    const counts = await env.dispatcher.runOnce(env.ctx({ now: () => new Date((t += 10_000)), woken: () => wakes-- > 0 }));
    assert.deepEqual({ claimed: counts.claimed, dispatched: counts.dispatched }, { claimed: 1, dispatched: 1 });
    assert.equal((await outboxRow(env.pool, row)).status, 'Done');
  });

  test("the claim and the outcomes commit without waiting for a WAL flush, for their own transaction only", async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 1 });
    const id = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: await insertMessage(env.pool, chatId, 1, alice), seq: 1 });
    const client = await env.pool.connect();
    try {
      await client.query('set synchronous_commit = on');
      const setting = async () => (await client.query<{ synchronous_commit: string }>('show synchronous_commit')).rows[0]!.synchronous_commit;
      await client.query('begin');
      const [claimed] = await claimDue(drizzle(client), { now: env.clock.now(), limit: 10, maxAttempts: 8, delaysMs: [1000], jitter: 0 });
      assert.equal(await setting(), 'off', 'inside the claim transaction');
      await client.query('commit');
      assert.equal(await setting(), 'on', 'the connection keeps its own setting');
      await client.query('begin');
      const landed = await recordOutcomes(drizzle(client), [{ id, rowVersion: claimed!.rowVersion, status: 'Done', lastError: null, attemptsDelta: 0, nextAttemptAt: null }], env.clock.now());
      assert.deepEqual([...landed], [id]);
      assert.equal(await setting(), 'off', 'inside the outcome transaction');
      await client.query('commit');
      assert.equal(await setting(), 'on');
    } finally {
      client.release();
    }
  });

  test('with idleWaitMs a run that found nothing more stays for the next wake and serves the rows it announces; then it ends', async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 1 });
    const messageId = await insertMessage(env.pool, chatId, 1, alice);
    const dispatcher = env.newDispatcher({ idleWaitMs: 300 });
    const asked: number[] = [];
    let row: string | undefined;
    const counts = await dispatcher.runOnce({
      ...env.ctx(),
      woken: () => false,
      waitForWake: async (ms) => {
        asked.push(ms);
        if (row) return false; // nothing more: the run ends
        row = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId, seq: 1 }); // a commit, and its wake
        return true;
      },
    });
    assert.deepEqual(asked, [300, 300]);
    assert.deepEqual({ claimed: counts.claimed, dispatched: counts.dispatched }, { claimed: 1, dispatched: 1 });
    assert.equal((await outboxRow(env.pool, row!)).status, 'Done');
  });

  test('without idleWaitMs (the kernel\'s default; the service sets one) a run does not wait for wakes', async () => {
    const env = await dispatchEnv();
    let asked = 0;
    const counts = await env.newDispatcher({ idleWaitMs: undefined }).runOnce({
      ...env.ctx(),
      waitForWake: async () => {
        asked++;
        return false;
      },
    });
    assert.equal(counts.claimed, 0);
    assert.equal(asked, 0);
  });
});
