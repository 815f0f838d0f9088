import { Type, type Static } from '@sinclair/typebox';
import type { Hub } from '../../../platform/realtime/index.ts';
import { Timestamp, Uuid } from '../../../platform/types/index.ts';
import { NOTIFICATION_CREATED_EVENT, NTF } from '../model.ts';
import type { NotificationProvider } from './port.ts';

/**
 * The hub frame of a new in-app notification (PascalCase, like every hub payload); published in
 * docs/realtime-frames.schema.json. Version is what POST /api/notifications/{id}/read expects: the
 * version the notification has once this delivery is recorded (the mark-read also accepts it in
 * the moment before that, see markRead).
 */
export const NotificationCreatedFrame = Type.Object(
  {
    NotificationId: Uuid,
    Title: Type.String(),
    Body: Type.String(),
    Data: Type.Record(Type.String(), Type.Unknown()),
    CreatedAt: Timestamp,
    Version: Type.Integer(),
  },
  { title: 'NotificationCreatedFrame', description: 'notification_created: a new in-app notification, to user:{UserId} (live only: not in the events stream)' },
);
export type NotificationCreatedFrame = Static<typeof NotificationCreatedFrame>;

/**
 * In-app delivery: a `notification_created` frame to `user:{UserId}` on every replica. A user with
 * no open connection is a success too — the copy is stored and the feed serves it on reconnect.
 */
export function createInAppProvider(hub: Hub): NotificationProvider {
  return {
    key: 'hub',
    implemented: true,
    configured: true,
    async send(d) {
      const frame: NotificationCreatedFrame = {
        NotificationId: d.notificationId,
        Title: d.title,
        Body: d.body,
        Data: d.data,
        CreatedAt: d.createdAt.toISOString(),
        Version: d.version + 1,
      };
      try {
        await hub.send(`user:${d.recipientUserId}`, NOTIFICATION_CREATED_EVENT, frame);
        return { ok: true, providerMessageId: `hub:${d.idempotencyKey}` };
      } catch {
        // The backplane (Redis) is unreachable: the frame may reach nobody, so try again later.
        return { ok: false, code: NTF.transient };
      }
    },
  };
}
