import type { Hub } from '../../../platform/realtime/index.ts';
import { NOTIFICATION_CREATED_EVENT, NTF } from '../model.ts';
import type { NotificationProvider } from './port.ts';

/** The hub frame of a new in-app notification (PascalCase, like every hub payload). */
export interface NotificationCreatedFrame {
  NotificationId: string;
  Title: string;
  Body: string;
  Data: Record<string, unknown>;
  CreatedAt: string;
  /**
   * What POST /api/notifications/{id}/read expects: the version the notification has once this
   * delivery is recorded (the mark-read also accepts it in the moment before that, see markRead).
   */
  Version: number;
}

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
