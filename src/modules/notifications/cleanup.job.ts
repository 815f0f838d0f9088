import type { Db } from '../../platform/db/index.ts';
import { defineSweep, type BatchWorker } from '../../platform/jobs/index.ts';
import { deleteLapsedNotices } from './chat-notices.ts';
import { NOTIFICATIONS_CLEANUP_JOB } from './model.ts';
import { deleteExpiredMarks } from './webhooks/replay-sql.ts';
import { NOTIFICATIONS_DEFAULTS } from './defaults.ts';

export interface NotificationsCleanupOptions {
  /** NOTIFICATIONS_CHAT_COLLAPSE_WINDOW: a chat notice folds messages this long after its own. */
  collapseWindowMs: number;
}

/**
 * The module's retention, one replica at a time, each step a bounded DELETE … RETURNING (the claim
 * is the work) repeated while it comes back full:
 * - `webhook-replays`: delivery-webhook signatures whose window is over (the signature check refuses
 *   them as stale by then);
 * - `chat-notices`: chat notices past their window by more than a backlog's allowance
 *   (NOTIFICATIONS_DEFAULTS.chatNoticeLagAllowanceMs), except a message request's (chat-notices.ts).
 */
export function notificationsCleanupJob(db: Db, opts: NotificationsCleanupOptions): BatchWorker {
  const d = NOTIFICATIONS_DEFAULTS;
  return defineSweep<{ noticesBefore: Date }>({
    name: NOTIFICATIONS_CLEANUP_JOB,
    every: d.cleanupIntervalMs,
    batchSize: d.cleanupBatchSize,
    maxRunMs: d.cleanupMaxRunMs,
    start: (run) => ({ noticesBefore: new Date(run.now().getTime() - opts.collapseWindowMs - d.chatNoticeLagAllowanceMs) }),
    runFields: ({ noticesBefore }) => ({ noticesBefore: noticesBefore.toISOString() }),
    steps: [
      { name: 'webhook-replays', count: 'replaysDeleted', sweep: (limit, run) => deleteExpiredMarks(db, run.now(), limit) },
      { name: 'chat-notices', count: 'chatNoticesDeleted', sweep: (limit, _run, { noticesBefore }) => deleteLapsedNotices(db, noticesBefore, limit) },
    ],
  });
}
