import nodemailer from 'nodemailer';
import { classifySmtpError, type SmtpErrorLike } from './classify.ts';
import { NTF } from '../model.ts';
import type { NotificationProvider } from './port.ts';

export interface SmtpOptions {
  host: string;
  port: number;
  secure: boolean;
  user?: string;
  password?: string;
  from: string;
  messageIdDomain: string;
  timeoutMs: number;
  /** Pooled SMTP connections kept open. */
  maxConnections?: number;
}

/** `<NotificationId.DeliveryCycle@domain>`: one Message-ID per notification and cycle. */
export const messageIdOf = (notificationId: string, deliveryCycle: number, domain: string): string =>
  `<${notificationId}.${deliveryCycle}@${domain}>`;

/**
 * Email over SMTP with nodemailer. The Message-ID is derived from the NotificationId, but SMTP has
 * no provider-side dedupe, so the adapter names its Message-ID up front (`intentMessageId`): the
 * workers record it before the call, and a send whose outcome was lost waits for the delivery
 * webhook or NOTIFICATIONS_UNCONFIRMED_TIMEOUT_SECONDS instead of going out again at once
 * (README "Notifications").
 */
export function createSmtpProvider(o: SmtpOptions): NotificationProvider {
  const transport = nodemailer.createTransport({
    pool: true,
    host: o.host,
    port: o.port,
    secure: o.secure,
    maxConnections: o.maxConnections ?? 5,
    ...(o.user ? { auth: { user: o.user, pass: o.password ?? '' } } : {}),
    connectionTimeout: o.timeoutMs,
    greetingTimeout: o.timeoutMs,
    socketTimeout: o.timeoutMs,
  });
  return {
    key: 'smtp',
    implemented: true,
    configured: true,
    intentMessageId: (d) => messageIdOf(d.notificationId, d.deliveryCycle, o.messageIdDomain),
    async send(d, signal) {
      if (!d.recipientAddress) return { ok: false, code: NTF.invalidRecipient };
      const messageId = messageIdOf(d.notificationId, d.deliveryCycle, o.messageIdDomain);
      try {
        const info = await transport.sendMail({
          from: o.from,
          to: d.recipientAddress,
          subject: d.title,
          text: d.body || d.title,
          messageId,
          headers: { 'X-PIN-Notification-Id': d.notificationId, 'X-PIN-Delivery-Cycle': String(d.deliveryCycle) },
          signal,
        });
        if (info.rejected.length > 0) return { ok: false, code: NTF.invalidRecipient };
        return { ok: true, providerMessageId: (info.messageId || messageId).slice(0, 255) };
      } catch (err) {
        return { ok: false, code: classifySmtpError(err as SmtpErrorLike) };
      }
    },
    async close() {
      transport.close();
    },
  };
}
