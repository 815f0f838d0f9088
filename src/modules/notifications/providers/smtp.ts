import { Transform } from 'node:stream';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { classifySmtpError, type SmtpErrorLike } from './classify.ts';
import { NTF } from '../model.ts';
import type { NotificationProvider } from './port.ts';
import { NOTIFICATIONS_DEFAULTS } from '../defaults.ts';

export interface SmtpOptions {
  host: string;
  port: number;
  secure: boolean;
  /** Without implicit TLS, a session that cannot STARTTLS is refused unless this allows plain text (local use). */
  allowPlain: boolean;
  user?: string;
  password?: string;
  from: string;
  messageIdDomain: string;
  timeoutMs: number;
  /** Pooled SMTP connections kept open (smtpDefaults). */
  maxConnections?: number;
}

export const smtpDefaults = {
  maxConnections: NOTIFICATIONS_DEFAULTS.smtpMaxConnections,
} as const satisfies Required<Pick<SmtpOptions, 'maxConnections'>>;

/** `<NotificationId.DeliveryCycle@domain>`: one Message-ID per notification and cycle. */
export const messageIdOf = (notificationId: string, deliveryCycle: number, domain: string): string =>
  `<${notificationId}.${deliveryCycle}@${domain}>`;

/** Where one send got to: once the whole body went to the connection, the server may accept it. */
interface BodyProbe {
  written: boolean;
}
const PROBE = 'pinBodyProbe';

/**
 * Email over SMTP with nodemailer. SMTP has no provider-side dedupe, so the adapter is at most once
 * where it must be: it names its Message-ID up front (`intentMessageId`, recorded by the workers
 * before the call), and a send that fails after the whole message body was handed to the server —
 * the reply to the end of DATA lost, late past our timeout, or the send aborted — is
 * NTF_PROVIDER_OUTCOME_UNKNOWN: the server may have accepted it, so it is never resent blindly
 * (delivery/intent.ts). Failures before that (connection, TLS, AUTH, MAIL/RCPT, a refused DATA)
 * are classified as usual and stay retriable where retrying can help.
 */
export function createSmtpProvider(o: SmtpOptions): NotificationProvider {
  const transport = nodemailer.createTransport({
    pool: true,
    host: o.host,
    port: o.port,
    secure: o.secure,
    // Credentials and addresses never cross a plain connection unless explicitly allowed.
    requireTLS: !o.secure && !o.allowPlain,
    maxConnections: o.maxConnections ?? smtpDefaults.maxConnections,
    ...(o.user ? { auth: { user: o.user, pass: o.password ?? '' } } : {}),
    connectionTimeout: o.timeoutMs,
    greetingTimeout: o.timeoutMs,
    socketTimeout: o.timeoutMs,
  });
  // The body passes this transform on its way to the connection; its end means the server got it all.
  transport.use('stream', (mail, done) => {
    const probe = (mail.data as Record<string, unknown>)[PROBE] as BodyProbe | undefined;
    if (probe) {
      mail.message.transform(
        () =>
          new Transform({
            transform: (chunk, _enc, cb) => cb(null, chunk),
            flush(cb) {
              probe.written = true;
              cb();
            },
          }),
      );
    }
    done();
  });
  return {
    key: 'smtp',
    implemented: true,
    configured: true,
    intentMessageId: (d) => messageIdOf(d.notificationId, d.deliveryCycle, o.messageIdDomain),
    async send(d, signal) {
      if (!d.recipientAddress) return { ok: false, code: NTF.invalidRecipient };
      const messageId = messageIdOf(d.notificationId, d.deliveryCycle, o.messageIdDomain);
      const probe: BodyProbe = { written: false };
      try {
        const info = await transport.sendMail({
          from: o.from,
          to: d.recipientAddress,
          subject: d.title,
          text: d.body || d.title,
          messageId,
          headers: { 'X-PIN-Notification-Id': d.notificationId, 'X-PIN-Delivery-Cycle': String(d.deliveryCycle) },
          signal,
          [PROBE]: probe,
        } as SendMailOptions);
        if (info.rejected.length > 0) return { ok: false, code: NTF.invalidRecipient };
        return { ok: true, providerMessageId: (info.messageId || messageId).slice(0, 255) };
      } catch (err) {
        const e = err as SmtpErrorLike;
        // A reply to the end of DATA refuses the message for sure; anything else after the body may have been accepted.
        if (probe.written && e.responseCode === undefined) return { ok: false, code: NTF.outcomeUnknown };
        return { ok: false, code: classifySmtpError(e) };
      }
    },
    async close() {
      transport.close();
    },
  };
}
