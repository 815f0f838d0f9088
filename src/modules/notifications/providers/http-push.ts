import { NTF } from '../model.ts';
import { postToProvider } from './http-send.ts';
import type { NotificationProvider } from './port.ts';

export interface HttpPushOptions {
  baseUrl: string;
  secret?: string;
  timeoutMs: number;
  now: () => Date;
}

/**
 * A push service in the FCM style: `POST {baseUrl}/send` `{ token, notification: { title, body },
 * data, collapseKey, clientReference, deliveryCycle }` with `Idempotency-Key`. 404/410 or an
 * UNREGISTERED / INVALID_TOKEN error is NTF_PUSH_TOKEN_INVALID (the token is then deleted).
 */
export function createHttpPushProvider(o: HttpPushOptions): NotificationProvider {
  const url = `${o.baseUrl.replace(/\/$/, '')}/send`;
  return {
    key: 'http-push',
    implemented: true,
    configured: true,
    async send(d, signal) {
      if (!d.recipientAddress) return { ok: false, code: NTF.pushTokenInvalid };
      return postToProvider({
        url,
        bearer: o.secret,
        idempotencyKey: d.idempotencyKey,
        body: {
          token: d.recipientAddress,
          notification: { title: d.title, body: d.body },
          data: { ...d.data, NotificationId: d.notificationId },
          collapseKey: d.notificationId,
          clientReference: d.notificationId,
          deliveryCycle: d.deliveryCycle,
        },
        timeoutMs: o.timeoutMs,
        signal,
        now: o.now,
        push: true,
      });
    },
  };
}
