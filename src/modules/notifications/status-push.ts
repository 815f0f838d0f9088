import type { Logger } from '../../platform/observability/index.ts';
import type { Hub } from '../../platform/realtime/index.ts';
import { NOTIFICATION_STATUS_CHANGED_EVENT, type Channel, type Status } from './model.ts';

/**
 * The domain event NotificationStatusChanged (seed 004), as a hub frame to `user:{UserId}`: an
 * in-app notification was read, or an external delivery became Sent or terminally Failed — what a
 * client needs to update a status or a badge (and, with Version, to mark it read without a 409).
 */
export interface NotificationStatusChangedFrame {
  NotificationId: string;
  Channel: Channel;
  Status: Status;
  Terminal: boolean;
  DeliveryCycle: number;
  /** LastError of a terminal failure; null otherwise. */
  ErrorCode: string | null;
  ReadAt: string | null;
  /** The notification's version after this change: what POST /api/notifications/{id}/read expects. */
  Version: number;
  OccurredAt: string;
}

export interface StatusChange {
  notificationId: string;
  recipientUserId: string;
  channel: Channel;
  status: Status;
  terminal: boolean;
  deliveryCycle: number;
  errorCode: string | null;
  readAt: Date | null;
  version: number;
}

const frameOf = (c: StatusChange, now: Date): NotificationStatusChangedFrame => ({
  NotificationId: c.notificationId,
  Channel: c.channel,
  Status: c.status,
  Terminal: c.terminal,
  DeliveryCycle: c.deliveryCycle,
  ErrorCode: c.errorCode,
  ReadAt: c.readAt?.toISOString() ?? null,
  Version: c.version,
  OccurredAt: now.toISOString(),
});

/** Sent and terminal Failed of external channels; the in-app copy's own delivery is its notification_created frame. */
export const announcesStatus = (channel: Channel, kind: 'sent' | 'retry' | 'terminal'): boolean => channel !== 'InApp' && kind !== 'retry';

/**
 * After the change committed, best effort: the stored status is the truth (GET /api/notifications
 * serves it), so a frame the backplane could not take is logged, never retried, and never fails the
 * change that caused it. Never throws.
 */
export async function pushStatusChanges(hub: Hub, log: Logger, changes: readonly StatusChange[], now: Date): Promise<void> {
  if (changes.length === 0) return;
  const results = await Promise.allSettled(
    changes.map((c) => hub.send(`user:${c.recipientUserId}`, NOTIFICATION_STATUS_CHANGED_EVENT, frameOf(c, now))),
  );
  const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [{ reason: r.reason as unknown, id: changes[i]!.notificationId }] : []));
  if (failed.length > 0) {
    log.warn(
      { frames: changes.length, failed: failed.length, notificationIds: failed.slice(0, 10).map((f) => f.id), err: { message: String((failed[0]!.reason as Error)?.message ?? failed[0]!.reason).slice(0, 200) } },
      'notification_status_changed frames not pushed (hub backplane unreachable); clients see the status on their next read',
    );
  }
}
