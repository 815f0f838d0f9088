import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp, type MessengerApp } from '../support/app.ts';
import { MESSENGER_DEFAULTS } from '../../../../src/modules/messenger/defaults.ts';
import { REACTIONS_RETENTION_JOB, reactionsRetentionJob } from '../../../../src/modules/messenger/messages/reactions-retention.job.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { newId, type Clock } from '../../../../src/platform/time.ts';

/**
 * The reactions retention (messages/reactions-retention.job.ts): rows of reactions taken back
 * longer ago than MESSENGER_DEFAULTS.reactionTakenBackRetentionMs are deleted in bounded batches;
 * live reactions and recently taken-back ones stay, and a reaction given again within the
 * retention keeps its id.
 */

const RETENTION = MESSENGER_DEFAULTS.reactionTakenBackRetentionMs;
const HOUR = 3_600_000;

/** One run's context on the app's clock (the kernel's own deadlines on it too). */
const runContext = (clock: Clock) => ({ jobRunId: newId(), signal: new AbortController().signal, log: createLogger('silent'), now: () => clock.now() });

type User = Awaited<ReturnType<MessengerApp['user']>>;
const path = (chatId: string, messageId: string, emoji: string) => `/api/messenger/chats/${chatId}/messages/${messageId}/reactions/${encodeURIComponent(emoji)}`;

/** Alice's group with bob, accepted, and alice's message in it. */
async function group(m: MessengerApp) {
  const [alice, bob] = [await m.user(), await m.user()];
  const chatId = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body.id;
  await m.accept(bob.token, chatId);
  const messageId = (await m.call<{ id: string }>(alice.token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body: 'hello' })).body.id;
  return { alice, bob, chatId, messageId };
}

async function setReaction(m: MessengerApp, u: User, chatId: string, messageId: string, emoji: string, added: boolean) {
  const res = await m.call(u.token, added ? 'PUT' : 'DELETE', path(chatId, messageId, emoji));
  assert.equal(res.status, 200);
}

const rows = async (m: MessengerApp) =>
  (await m.pool.query<{ emoji: string; user_id: string; id: string; live: boolean }>(
    `select emoji, user_id, id, removed_at is null as live from messenger.message_reactions order by emoji collate "C", user_id`,
  )).rows;

describe('reactions retention', () => {
  test('deletes reactions taken back longer ago than the retention; live and recently taken-back ones stay', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId, messageId } = await group(m);
    for (const e of ['👍', '❤️', '🎉']) await setReaction(m, bob, chatId, messageId, e, true);
    await setReaction(m, alice, chatId, messageId, '👍', true);
    // Taken back long ago: 👍 of bob and of alice; 🎉 stays live all along (given long ago).
    await setReaction(m, bob, chatId, messageId, '👍', false);
    await setReaction(m, alice, chatId, messageId, '👍', false);
    m.clock.advance(RETENTION - HOUR);
    // Taken back recently: ❤️ of bob (an hour before the others pass the retention).
    await setReaction(m, bob, chatId, messageId, '❤️', false);
    const early = await m.app.platform.runner.runNow(REACTIONS_RETENTION_JOB);
    assert.deepEqual([early.outcome, early.counts.deleted], ['success', 0], 'nothing is deleted within the retention');
    m.clock.advance(2 * HOUR);

    const run = await m.app.platform.runner.runNow(REACTIONS_RETENTION_JOB);
    assert.deepEqual([run.outcome, run.counts.deleted], ['success', 2]);
    assert.deepEqual(
      (await rows(m)).map((r) => [r.emoji, r.user_id === bob.id ? 'bob' : 'alice', r.live]),
      [['❤️', 'bob', false], ['🎉', 'bob', true]],
    );
    // What the deleted rows stood for is unchanged: history shows the live reaction only.
    const history = await m.call<{ items: { id: string; reactions: unknown[] }[] }>(alice.token, 'GET', `/api/messenger/chats/${chatId}/messages`);
    assert.deepEqual(history.body.items.find((x) => x.id === messageId)?.reactions, [{ emoji: '🎉', count: 1, mine: false }]);
  });

  test('a reaction given again within the retention keeps its id; one given again after it is a new row', async () => {
    const m = await messengerApp();
    const { bob, chatId, messageId } = await group(m);
    await setReaction(m, bob, chatId, messageId, '👍', true);
    const [first] = await rows(m);
    await setReaction(m, bob, chatId, messageId, '👍', false);
    m.clock.advance(RETENTION - HOUR);
    await m.app.platform.runner.runNow(REACTIONS_RETENTION_JOB);
    await setReaction(m, bob, chatId, messageId, '👍', true);
    assert.deepEqual((await rows(m)).map((r) => [r.id, r.live]), [[first!.id, true]], 'revived within the retention: same row, same id');
    await setReaction(m, bob, chatId, messageId, '👍', false);
    m.clock.advance(RETENTION + HOUR);
    assert.equal((await m.app.platform.runner.runNow(REACTIONS_RETENTION_JOB)).counts.deleted, 1);
    await setReaction(m, bob, chatId, messageId, '👍', true);
    const [again] = await rows(m);
    assert.equal(again!.live, true);
    assert.notEqual(again!.id, first!.id, 'past the retention the reaction is a new row');
  });

  test('a backlog larger than one batch is deleted across batches in one run, live rows untouched', async () => {
    const m = await messengerApp();
    const { alice, bob, chatId, messageId } = await group(m);
    await setReaction(m, bob, chatId, messageId, '🎉', true);
    const longAgo = new Date(m.clock.now().getTime() - RETENTION - HOUR);
    // 25 taken-back rows (each its own user), written directly: the API would need 25 members.
    await m.pool.query(
      `insert into messenger.message_reactions (message_id, user_id, emoji, id, created_at, removed_at)
       select $1, gen_random_uuid(), '👍', gen_random_uuid(), $2, $2 from generate_series(1, 25)`,
      [messageId, longAgo],
    );
    await m.pool.query(
      `insert into messenger.message_reactions (message_id, user_id, emoji, id, created_at) values ($1, $2, '👍', $3, $4)`,
      [messageId, alice.id, newId(), longAgo],
    );
    const job = reactionsRetentionJob(m.database.db, { retentionMs: RETENTION, intervalMs: HOUR, batchSize: 10, maxRunMs: HOUR });

    const counts = await job.runOnce(runContext(m.clock));

    assert.equal(counts.deleted, 25);
    assert.equal(counts.batches, 3, 'three statements of at most 10 rows: 10, 10, 5');
    assert.deepEqual((await rows(m)).map((r) => [r.emoji, r.live]), [['🎉', true], ['👍', true]]);
    assert.equal((await job.runOnce(runContext(m.clock))).deleted, 0);
  });
});
