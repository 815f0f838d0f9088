import { NTF } from '../model.ts';
import { postToProvider } from './http-send.ts';
import type { NotificationProvider } from './port.ts';

export interface HttpSmsOptions {
  baseUrl: string;
  secret?: string;
  timeoutMs: number;
  now: () => Date;
}

/**
 * An SMS gateway with a JSON API: `POST {baseUrl}/messages` `{ to, text, clientReference,
 * deliveryCycle }` with `Idempotency-Key: NotificationId:DeliveryCycle`; 2xx `{ messageId }`.
 * Delivery receipts come back on the webhook with the clientReference.
 */
export function createHttpSmsProvider(o: HttpSmsOptions): NotificationProvider {
  const url = `${o.baseUrl.replace(/\/$/, '')}/messages`;
  return {
    key: 'http-sms',
    implemented: true,
    configured: true,
    async send(d, signal) {
      if (!d.recipientAddress) return { ok: false, code: NTF.invalidRecipient };
      return postToProvider({
        url,
        bearer: o.secret,
        idempotencyKey: d.idempotencyKey,
        body: {
          to: d.recipientAddress,
          text: [d.title, d.body].filter(Boolean).join('\n'),
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
