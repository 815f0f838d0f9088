import { NTF, type ProviderErrorCode } from '../model.ts';

/**
 * Provider answers → the seed's error codes. Retriable: 5xx, 408, 429, timeouts, connection errors.
 * Non-retriable: the recipient or token is invalid, or the message itself is refused.
 */

/** Error codes in a provider's JSON error body that name the recipient or the device token. */
const INVALID_RECIPIENT_CODES = new Set(['INVALID_RECIPIENT', 'INVALID_PHONE', 'INVALID_NUMBER', 'INVALID_ADDRESS', 'UNKNOWN_SUBSCRIBER']);
const INVALID_TOKEN_CODES = new Set(['UNREGISTERED', 'INVALID_TOKEN', 'INVALID_REGISTRATION', 'NOT_REGISTERED']);

/** `{ error: { code } }`, `{ error: "CODE" }` or `{ code }`, upper-cased; undefined when absent. */
export function errorCodeInBody(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as { error?: unknown; code?: unknown };
  const raw =
    typeof b.error === 'string'
      ? b.error
      : b.error && typeof b.error === 'object' && typeof (b.error as { code?: unknown }).code === 'string'
        ? (b.error as { code: string }).code
        : typeof b.code === 'string'
          ? b.code
          : undefined;
  return raw?.toUpperCase();
}

/** Retry-After in seconds or as an HTTP date, in ms from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

/** A non-2xx HTTP answer of an SMS-gateway or push service. `push` enables the invalid-token codes. */
export function classifyHttpFailure(status: number, body: unknown, opts: { push: boolean }): ProviderErrorCode {
  if (status === 429) return NTF.rateLimited;
  if (status >= 500 || status === 408) return NTF.transient;
  if (status === 401 || status === 403) return NTF.authFailed;
  const code = errorCodeInBody(body);
  if (opts.push && (status === 404 || status === 410 || (code !== undefined && INVALID_TOKEN_CODES.has(code)))) {
    return NTF.pushTokenInvalid;
  }
  if (code !== undefined && INVALID_RECIPIENT_CODES.has(code)) return NTF.invalidRecipient;
  return NTF.rejected;
}

/** nodemailer's error: `responseCode` is the SMTP reply code, `code` its own classification. */
export interface SmtpErrorLike {
  code?: string;
  responseCode?: number;
}

/** nodemailer codes of a session that never got to the message: the connection, its greeting or its TLS. */
const SMTP_SESSION_CODES = new Set(['ECONNECTION', 'ETLS', 'ESOCKET', 'ETIMEDOUT', 'EDNS', 'EPROTOCOL']);

/**
 * SMTP replies: 4yz is temporary by definition (RFC 5321); 550/551/553 and 501 on RCPT name a
 * mailbox that does not exist or an address that is malformed; other 5yz refuse the message.
 * Connection, greeting, TLS (a server refusing STARTTLS answers 5yz, yet the message was never
 * offered: an operator fixes the server or the setting) and timeout failures are transient. The
 * adapter decides first whether the message may already have been accepted (providers/smtp.ts).
 */
export function classifySmtpError(err: SmtpErrorLike): ProviderErrorCode {
  if (err.code !== undefined && SMTP_SESSION_CODES.has(err.code)) return NTF.transient;
  const reply = err.responseCode;
  if (reply !== undefined && reply >= 400 && reply < 500) return NTF.transient;
  if (reply === 550 || reply === 551 || reply === 553 || reply === 501) return NTF.invalidRecipient;
  if (reply === 535 || reply === 530) return NTF.authFailed;
  if (reply !== undefined && reply >= 500) return NTF.rejected;
  if (err.code === 'EENVELOPE') return NTF.invalidRecipient;
  if (err.code === 'EAUTH') return NTF.authFailed;
  return NTF.transient;
}
