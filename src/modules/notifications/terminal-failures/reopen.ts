import type { NotificationsContext } from '../context.ts';
import { recordStatusChanges } from '../status-frames.ts';
import { reopenTerminal, type Reprocessed, type TerminalFilter } from './sql.ts';

/**
 * The reopen of terminal Failed notifications and their NotificationStatusChanged frames (Failed, to
 * be retried, in the new cycle) in one transaction: what the runbook's reprocess calls and the ops
 * console's retry action run.
 */
export function reopen(ctx: Pick<NotificationsContext, 'db' | 'clock' | 'userFrames'>, filter: TerminalFilter, limit: number): Promise<Reprocessed[]> {
  const now = ctx.clock.now();
  return ctx.db.transaction(async (tx) => {
    const rows = await reopenTerminal(tx, filter, limit, now);
    await recordStatusChanges(
      ctx.userFrames,
      tx,
      rows.map((r) => ({ notificationId: r.id, recipientUserId: r.recipientUserId, channel: r.channel, status: 'Failed' as const, terminal: false, deliveryCycle: r.deliveryCycle, errorCode: r.lastError, readAt: r.readAt, version: r.version })),
      now,
    );
    return rows;
  });
}
