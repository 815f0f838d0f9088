import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../support/db.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../src/platform/time.ts';
import { noticeCandidates } from '../../../src/modules/notifications/chat-notices.ts';
import { notificationsCleanupJob } from '../../../src/modules/notifications/cleanup.job.ts';
import { NOTIFICATIONS_DEFAULTS } from '../../../src/modules/notifications/defaults.ts';

/**
 * The chat notices' retention (notifications-cleanup, step `chat-notices`): a notice past its window
 * by more than the backlog allowance is deleted in bounded batches; a recent one and a message
 * request's stay, and the once-per-window and once-per-request rules read them as before.
 */
const t = await createTestDatabase();
const NOW = new Date('2026-06-01T12:00:00.000Z');
const clock = new ManualClock(NOW);
const WINDOW = 60_000;
const KEPT = WINDOW + NOTIFICATIONS_DEFAULTS.chatNoticeLagAllowanceMs;
const ago = (ms: number) => new Date(NOW.getTime() - ms);
const job = notificationsCleanupJob(t.db, { collapseWindowMs: WINDOW });
const run = () => job.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log: createLogger('silent'), now: () => clock.now() });

async function notice(chatId: string, userId: string, notifiedAt: Date, request = false): Promise<void> {
  await t.pool.query(
    `insert into notifications.chat_notices (recipient_user_id, chat_id, notification_id, notified_at, request) values ($1, $2, $3, $4, $5)`,
    [userId, chatId, newId(), notifiedAt, request],
  );
}

const kept = async (chatId: string) =>
  (await t.pool.query<{ recipient_user_id: string }>(`select recipient_user_id from notifications.chat_notices where chat_id = $1`, [chatId])).rows
    .map((r) => r.recipient_user_id)
    .sort();

describe('chat notices cleanup', () => {
  test('deletes notices past the window and the allowance; recent ones and message requests stay, and still hold their rules', async () => {
    const chatId = newId();
    const [lapsed, recent, inWindow, asked] = [newId(), newId(), newId(), newId()];
    await notice(chatId, lapsed, ago(KEPT + 1000));
    await notice(chatId, recent, ago(KEPT - 1000)); // past the window, within the allowance
    await notice(chatId, inWindow, ago(10_000));
    await notice(chatId, asked, ago(30 * KEPT), true); // a message request's notice, however old

    const counts = await run();

    assert.equal(counts.chatNoticesDeleted, 1);
    assert.deepEqual(await kept(chatId), [recent, inWindow, asked].sort());
    // A message sent now: the notice in its window still folds it, the request still notifies once
    // only; the recipient whose notice went is notified, as its old notice allowed anyway.
    const scope = { chatId, sentAt: NOW, windowMs: WINDOW };
    const recipients = [lapsed, recent, inWindow, asked].map((userId) => ({ userId, request: userId === asked }));
    const candidates = await noticeCandidates(t.db, scope, recipients);
    assert.deepEqual(candidates.map((c) => c.userId).sort(), [lapsed, recent].sort());
  });

  test('a backlog larger than one batch is deleted across batches in one run', async () => {
    const chatId = newId();
    const batch = NOTIFICATIONS_DEFAULTS.cleanupBatchSize;
    await t.pool.query(
      `insert into notifications.chat_notices (recipient_user_id, chat_id, notification_id, notified_at, request)
       select gen_random_uuid(), $1, gen_random_uuid(), $2, false from generate_series(1, $3::int)`,
      [chatId, ago(KEPT + 60_000), 2 * batch + 5],
    );
    const stays = newId();
    await notice(chatId, stays, ago(1000));

    const counts = await run();

    assert.equal(counts.chatNoticesDeleted, 2 * batch + 5);
    assert.equal(counts.batches, 3, `statements of at most ${batch} rows: ${batch}, ${batch}, 5`);
    assert.deepEqual(await kept(chatId), [stays]);
    assert.equal((await run()).chatNoticesDeleted, 0);
  });
});
