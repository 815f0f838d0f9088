import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Delivery webhooks are signed: `X-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">`
 * with `X-Signature-Timestamp: <unix seconds>`. The timestamp is inside the MAC and must be within
 * the allowed skew, so a captured receipt cannot be replayed later.
 */
export const SIGNATURE_HEADER = 'x-signature';
export const TIMESTAMP_HEADER = 'x-signature-timestamp';

export function signWebhook(secret: string, timestamp: number, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')}`;
}

export type SignatureCheck = 'ok' | 'missing' | 'malformed' | 'stale' | 'mismatch';

export function checkWebhookSignature(o: {
  secret: string;
  rawBody: string;
  signature: string | undefined;
  timestamp: string | undefined;
  now: Date;
  maxSkewSeconds: number;
}): SignatureCheck {
  if (!o.signature || !o.timestamp) return 'missing';
  if (!/^\d{1,12}$/.test(o.timestamp) || !/^sha256=[0-9a-f]{64}$/i.test(o.signature)) return 'malformed';
  const ts = Number(o.timestamp);
  if (Math.abs(o.now.getTime() / 1000 - ts) > o.maxSkewSeconds) return 'stale';
  const expected = Buffer.from(signWebhook(o.secret, ts, o.rawBody).toLowerCase());
  const given = Buffer.from(o.signature.toLowerCase());
  return expected.length === given.length && timingSafeEqual(expected, given) ? 'ok' : 'mismatch';
}
