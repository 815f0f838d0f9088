import { NTF } from '../model.ts';
import { postToProvider } from './http-send.ts';
import type { NotificationProvider } from './port.ts';

export interface HttpEmailOptions {
  baseUrl: string;
  secret?: string;
  from: string;
  timeoutMs: number;
  now: () => Date;
}

/**
 * An email API in the style of transactional mail services: `POST {baseUrl}/emails` `{ from, to,
 * subject, text, clientReference, deliveryCycle }` with `Idempotency-Key: NotificationId:DeliveryCycle`;
 * 2xx `{ messageId }`. Unlike SMTP, the provider dedupes a resend of the same key, so a worker that
 * died after the acceptance simply sends again and the row ends Sent with no second mail (seed 004
 * A4). Delivery receipts come back on the webhook with the clientReference.
 */
export function createHttpEmailProvider(o: HttpEmailOptions): NotificationProvider {
  const url = `${o.baseUrl.replace(/\/$/, '')}/emails`;
  return {
    key: 'http-email',
    implemented: true,
    configured: true,
    async send(d, signal) {
      if (!d.recipientAddress) return { ok: false, code: NTF.invalidRecipient };
      return postToProvider({
        url,
        bearer: o.secret,
        idempotencyKey: d.idempotencyKey,
        body: {
          from: o.from,
          to: d.recipientAddress,
          subject: d.title,
          text: d.body || d.title,
          clientReference: d.notificationId,
          deliveryCycle: d.deliveryCycle,
        },
        timeoutMs: o.timeoutMs,
        signal,
        now: o.now,
        push: false,
      });
    },
  };
}
