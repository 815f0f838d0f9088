import type { Db } from '../../platform/db/index.ts';
import type { UserFrames } from '../../platform/module.ts';
import { Type, type Static } from '@sinclair/typebox';
import type { KindRegistration } from '../../platform/push/index.ts';
import { Nullable, Timestamp, Uuid } from '../../platform/types/index.ts';
import { CHANNELS, NOTIFICATION_STATUS_CHANGED_EVENT, STATUSES, type Channel, type Status } from './model.ts';

/**
 * The domain event NotificationStatusChanged (seed 004), as a hub frame to `user:{UserId}`: an
 * in-app notification was read, or an external delivery became Sent, Failed (to be retried, or
 * terminally), unconfirmed, or was reopened by a webhook or an admin — what a client needs to update
 * a status or a badge (and, with Version, to mark it read without a 409). A type, not an interface,
 * so it is a plain record the userFrames port takes as is (no copy per frame).
 */
export const NotificationStatusChangedFrame = Type.Object(
  {
    NotificationId: Uuid,
    Channel: Type.Union(CHANNELS.map((c) => Type.Literal(c))),
    Status: Type.Union(STATUSES.map((s) => Type.Literal(s))),
    Terminal: Type.Boolean(),
    DeliveryCycle: Type.Integer(),
    ErrorCode: Nullable(Type.String({ description: 'LastError of a Failed notification; null otherwise' })),
    ReadAt: Nullable(Timestamp),
    Version: Type.Integer({ description: "The notification's version after this change: what POST /api/notifications/{id}/read expects" }),
    OccurredAt: Timestamp,
    Cursor: Type.Optional(Type.String({ description: "The frame's position in the events stream (GET /api/events?after=)" })),
  },
  { title: 'NotificationStatusChangedFrame', description: 'notification_status_changed: to user:{UserId}' },
);
export type NotificationStatusChangedFrame = Static<typeof NotificationStatusChangedFrame>;

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

/**
 * The kind notifications owns on the push path: carried (the row holds the frame as committed, a
 * status and its version then), pushed as notification_status_changed (NOTIFICATION_STATUS_CHANGED_EVENT),
 * with its frame's schema.
 */
export const STATUS_FRAME_KINDS: KindRegistration = {
  owner: 'notifications',
  carried: ['NotificationStatusChanged'],
  // The event stream's answer is documented by it (platform/push stream-schema.ts).
  frames: { NotificationStatusChanged: NotificationStatusChangedFrame },
};

export const frameOf = (c: StatusChange, now: Date): NotificationStatusChangedFrame => ({
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

/** Every delivery outcome is announced, except an in-app copy's own Sent: its notification_created frame is that. */
export const announcesStatus = (channel: Channel, kind: 'sent' | 'retry' | 'terminal' | 'unknown'): boolean => !(channel === 'InApp' && kind === 'sent');

/**
 * Call in the transaction of the status change: the frames are written with it into the realtime
 * outbox (the kernel's push part, push.userFrames), whose one dispatcher pushes them after the commit —
 * retrying while the backplane is down, each with its `Cursor` — and keeps them in the user's
 * event stream, so a change is never announced before it is committed, nor lost after, nor
 * missed by a client that reconnects (GET /api/events).
 */
export async function recordStatusChanges(frames: UserFrames, tx: Db, changes: readonly StatusChange[], now: Date): Promise<void> {
  if (changes.length === 0) return;
  await frames(
    tx,
    changes.map((c) => ({ userId: c.recipientUserId, event: NOTIFICATION_STATUS_CHANGED_EVENT, payload: frameOf(c, now) })),
    now,
  );
}
