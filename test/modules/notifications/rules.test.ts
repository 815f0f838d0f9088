import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decideAttempt, endsCycle, idempotencyKeyOf, isRetriable, retryDelayMs, type RetryPolicy } from '../../../src/modules/notifications/delivery/rules.ts';
import { isOutcomeUnknown } from '../../../src/modules/notifications/delivery/intent.ts';
import { decideMarkRead } from '../../../src/modules/notifications/notifications.ts';
import { decideReceipt, namesItsCycle, parseReference } from '../../../src/modules/notifications/webhooks/receipt-rules.ts';
import { classifyHttpFailure, classifySmtpError, parseRetryAfter } from '../../../src/modules/notifications/providers/classify.ts';
import { checkWebhookSignature, signWebhook } from '../../../src/modules/notifications/webhooks/signature.ts';

const now = new Date('2026-03-01T10:00:00Z');
const exp: RetryPolicy = { maxAttempts: 4, backoff: { kind: 'Exponential', initialSeconds: 60, maxSeconds: 600, multiplier: 2 } };
const failed = (attempts: number) => ({ status: 'Failed' as const, attempts, terminal: false });

describe('backoff', () => {
  test('Fixed waits the same delay after every attempt', () => {
    const fixed = { kind: 'Fixed' as const, initialSeconds: 30, maxSeconds: 30, multiplier: 1 };
    assert.deepEqual([1, 2, 5].map((n) => retryDelayMs(fixed, n)), [30_000, 30_000, 30_000]);
  });
  test('Exponential grows by the multiplier from the first delay and stops at the maximum', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 9].map((n) => retryDelayMs(exp.backoff, n)), [60_000, 120_000, 240_000, 480_000, 600_000, 600_000]);
  });
});

describe('error classification', () => {
  test('transient and rate-limited errors retry; invalid recipient/token and refusals do not', () => {
    assert.ok(isRetriable('NTF_PROVIDER_TRANSIENT'));
    assert.ok(isRetriable('NTF_PROVIDER_RATE_LIMITED'));
    assert.ok(!isRetriable('NTF_PROVIDER_INVALID_RECIPIENT'));
    assert.ok(!isRetriable('NTF_PUSH_TOKEN_INVALID'));
    assert.ok(!isRetriable('NTF_PROVIDER_REJECTED'));
  });
  test('HTTP: 5xx/408 transient, 429 rate limited, invalid-recipient and dead-token bodies non-retriable', () => {
    assert.equal(classifyHttpFailure(503, undefined, { push: false }), 'NTF_PROVIDER_TRANSIENT');
    assert.equal(classifyHttpFailure(408, undefined, { push: false }), 'NTF_PROVIDER_TRANSIENT');
    assert.equal(classifyHttpFailure(429, undefined, { push: false }), 'NTF_PROVIDER_RATE_LIMITED');
    assert.equal(classifyHttpFailure(400, { error: { code: 'INVALID_RECIPIENT' } }, { push: false }), 'NTF_PROVIDER_INVALID_RECIPIENT');
    assert.equal(classifyHttpFailure(400, { error: 'template missing' }, { push: false }), 'NTF_PROVIDER_REJECTED');
    assert.equal(classifyHttpFailure(404, undefined, { push: true }), 'NTF_PUSH_TOKEN_INVALID');
    assert.equal(classifyHttpFailure(400, { error: { code: 'UNREGISTERED' } }, { push: true }), 'NTF_PUSH_TOKEN_INVALID');
    assert.equal(classifyHttpFailure(401, undefined, { push: false }), 'NTF_PROVIDER_AUTH_FAILED');
  });
  test('SMTP: 4yz and connection errors transient, 550/553 invalid recipient, other 5yz refused', () => {
    assert.equal(classifySmtpError({ responseCode: 451 }), 'NTF_PROVIDER_TRANSIENT');
    assert.equal(classifySmtpError({ responseCode: 421 }), 'NTF_PROVIDER_TRANSIENT');
    assert.equal(classifySmtpError({ code: 'ECONNECTION' }), 'NTF_PROVIDER_TRANSIENT');
    assert.equal(classifySmtpError({ code: 'ETIMEDOUT' }), 'NTF_PROVIDER_TRANSIENT');
    assert.equal(classifySmtpError({ responseCode: 550, code: 'EENVELOPE' }), 'NTF_PROVIDER_INVALID_RECIPIENT');
    assert.equal(classifySmtpError({ responseCode: 553 }), 'NTF_PROVIDER_INVALID_RECIPIENT');
    assert.equal(classifySmtpError({ responseCode: 554 }), 'NTF_PROVIDER_REJECTED');
  });
  test('SMTP: a server refusing STARTTLS (5yz on a session that never offered the message) is transient, not a refused message', () => {
    assert.equal(classifySmtpError({ code: 'ETLS', responseCode: 502 }), 'NTF_PROVIDER_TRANSIENT');
    assert.equal(classifySmtpError({ code: 'EAUTH', responseCode: 535 }), 'NTF_PROVIDER_AUTH_FAILED');
    assert.equal(isRetriable(classifySmtpError({ code: 'EAUTH', responseCode: 535 })), true);
  });
  test('Retry-After is read in seconds or as an HTTP date', () => {
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter(new Date(now.getTime() + 30_000).toUTCString(), now), 30_000);
    assert.equal(parseRetryAfter('soon', now), undefined);
  });
});

describe('decideAttempt (status transitions)', () => {
  test('success: Pending or Failed → Sent with the provider message id, attempt counted', () => {
    assert.deepEqual(decideAttempt({ status: 'Pending', attempts: 0, terminal: false }, { ok: true, providerMessageId: 'p-1' }, exp, now), {
      kind: 'sent',
      attempts: 1,
      providerMessageId: 'p-1',
    });
    assert.equal(decideAttempt(failed(2), { ok: true, providerMessageId: 'p' }, exp, now).kind, 'sent');
  });
  test('a retriable error → Failed with NextAttemptAt = now + backoff(attempts), no cycle end', () => {
    const d = decideAttempt({ status: 'Pending', attempts: 0, terminal: false }, { ok: false, code: 'NTF_PROVIDER_TRANSIENT' }, exp, now);
    assert.deepEqual(d, { kind: 'retry', attempts: 1, code: 'NTF_PROVIDER_TRANSIENT', nextAttemptAt: new Date('2026-03-01T10:01:00Z') });
    assert.ok(!endsCycle(d));
    const second = decideAttempt(failed(1), { ok: false, code: 'NTF_PROVIDER_RATE_LIMITED' }, exp, now);
    assert.deepEqual(second.kind === 'retry' && second.nextAttemptAt, new Date('2026-03-01T10:02:00Z'));
  });
  test('a 429 Retry-After longer than the backoff postpones the next attempt to it', () => {
    const d = decideAttempt(failed(1), { ok: false, code: 'NTF_PROVIDER_RATE_LIMITED', retryAfterMs: 900_000 }, exp, now);
    assert.deepEqual(d.kind === 'retry' && d.nextAttemptAt, new Date('2026-03-01T10:15:00Z'));
  });
  test('the attempt that reaches MaxAttempts with a retriable error is terminal (A1, INV-NTF-7)', () => {
    const d = decideAttempt(failed(3), { ok: false, code: 'NTF_PROVIDER_TRANSIENT' }, exp, now);
    assert.deepEqual(d, { kind: 'terminal', attempts: 4, code: 'NTF_PROVIDER_TRANSIENT', reason: 'max_attempts' });
    assert.ok(endsCycle(d));
  });
  test('a non-retriable error is terminal at the first attempt (A2)', () => {
    const d = decideAttempt({ status: 'Pending', attempts: 0, terminal: false }, { ok: false, code: 'NTF_PUSH_TOKEN_INVALID' }, exp, now);
    assert.deepEqual(d, { kind: 'terminal', attempts: 1, code: 'NTF_PUSH_TOKEN_INVALID', reason: 'non_retriable' });
  });
  test('NTF_PROVIDER_NOT_IMPLEMENTED skips without counting an attempt (A3)', () => {
    assert.deepEqual(decideAttempt(failed(1), { ok: false, code: 'NTF_PROVIDER_NOT_IMPLEMENTED' }, exp, now), {
      kind: 'skip',
      reason: 'provider_not_implemented',
    });
  });
  test('a row that is already Sent or terminal Failed is never overwritten (A5, INV-NTF-5)', () => {
    const sent = { status: 'Sent' as const, attempts: 1, terminal: false };
    assert.deepEqual(decideAttempt(sent, { ok: false, code: 'NTF_PROVIDER_TRANSIENT' }, exp, now), { kind: 'discard' });
    assert.deepEqual(decideAttempt({ ...failed(4), terminal: true }, { ok: true, providerMessageId: 'x' }, exp, now), { kind: 'discard' });
  });
  test('an unknown outcome (the provider may have accepted) is neither a retry nor terminal, and uses no attempt, even at MaxAttempts', () => {
    const d = decideAttempt(failed(3), { ok: false, code: 'NTF_PROVIDER_OUTCOME_UNKNOWN' }, exp, now);
    assert.deepEqual(d, { kind: 'unknown', attempts: 3 });
    assert.equal(endsCycle(d), false);
    assert.equal(isRetriable('NTF_PROVIDER_OUTCOME_UNKNOWN'), false);
  });
});

describe('delivery receipts and DeliveryCycle / MaxReopens', () => {
  const sent = { status: 'Sent' as const, terminal: false, deliveryCycle: 1, deliveredAt: null, providerMessageId: 'gw-1' };
  const failed = (deliveryCycle: number) => ({ outcome: 'failed' as const, deliveryCycle });
  const delivered = { outcome: 'delivered' as const, deliveryCycle: 1 };
  test('failed on Sent reopens into the next cycle while reopens are left, then is terminal', () => {
    assert.deepEqual(decideReceipt(sent, failed(1), 3), { kind: 'reopen', deliveryCycle: 2 });
    assert.deepEqual(decideReceipt({ ...sent, deliveryCycle: 3 }, failed(3), 3), { kind: 'reopen', deliveryCycle: 4 });
    assert.deepEqual(decideReceipt({ ...sent, deliveryCycle: 4 }, failed(4), 3), { kind: 'terminal' });
    assert.deepEqual(decideReceipt(sent, failed(1), 0), { kind: 'terminal' });
  });
  test('a receipt about an older cycle is ignored', () => {
    assert.deepEqual(decideReceipt({ ...sent, deliveryCycle: 2 }, failed(1), 3), { kind: 'ignore', reason: 'stale_cycle' });
  });
  test('a receipt names its cycle by number, or by the providerMessageId the row holds; naming neither never means "the current one"', () => {
    assert.deepEqual(decideReceipt(sent, { outcome: 'failed', providerMessageId: 'gw-1' }, 3), { kind: 'reopen', deliveryCycle: 2 });
    // After a reopen the row holds no id (or the next cycle's): cycle 1's id is stale.
    assert.deepEqual(decideReceipt({ ...sent, deliveryCycle: 2, providerMessageId: 'gw-2' }, { outcome: 'failed', providerMessageId: 'gw-1' }, 3), { kind: 'ignore', reason: 'stale_cycle' });
    assert.deepEqual(decideReceipt({ ...sent, status: 'Failed', deliveryCycle: 2, providerMessageId: null }, { outcome: 'delivered', providerMessageId: 'gw-1' }, 3), { kind: 'ignore', reason: 'stale_cycle' });
    assert.deepEqual(decideReceipt(sent, { outcome: 'failed' }, 3), { kind: 'ignore', reason: 'stale_cycle' });
    assert.equal(namesItsCycle({}), false);
    assert.equal(namesItsCycle({ providerMessageId: '' }), false);
    assert.equal(namesItsCycle({ deliveryCycle: 1 }), true);
    assert.equal(namesItsCycle({ providerMessageId: 'gw-1' }), true);
  });
  test('delivered confirms Sent once, records Sent for an accepted-but-unrecorded row, never revives terminal', () => {
    assert.deepEqual(decideReceipt(sent, delivered, 3), { kind: 'confirm' });
    assert.deepEqual(decideReceipt({ ...sent, deliveredAt: now }, delivered, 3), { kind: 'ignore', reason: 'already_confirmed' });
    assert.deepEqual(decideReceipt({ ...sent, status: 'Failed' }, delivered, 3), { kind: 'mark-sent' });
    assert.deepEqual(decideReceipt({ ...sent, status: 'Failed', terminal: true }, delivered, 3), { kind: 'ignore', reason: 'final' });
  });
  test('failed on a row that is not Sent changes nothing', () => {
    assert.deepEqual(decideReceipt({ ...sent, status: 'Pending' }, failed(1), 3), { kind: 'ignore', reason: 'not_sent' });
  });
  test('failed on an unconfirmed send (outcome unknown) settles it: a new cycle, due at once', () => {
    assert.deepEqual(decideReceipt({ ...sent, status: 'Failed', unconfirmed: true }, failed(1), 3), { kind: 'reopen', deliveryCycle: 2 });
  });
  test('the idempotency key carries the cycle and reads back from a reference', () => {
    const id = '0190a0b0-0000-7000-8000-000000000001';
    assert.equal(idempotencyKeyOf(id, 2), `${id}:2`);
    assert.deepEqual(parseReference(`${id}:2`), { notificationId: id, deliveryCycle: 2 });
    assert.deepEqual(parseReference(id.toUpperCase()), { notificationId: id });
    assert.equal(parseReference('nope'), null);
  });
});

describe('mark-read version guard', () => {
  test('the expected version marks; another version conflicts; an already-read row is left as is', () => {
    assert.deepEqual(decideMarkRead({ version: 3, readAt: null, status: 'Sent' }, 3), { kind: 'mark' });
    assert.deepEqual(decideMarkRead({ version: 4, readAt: null, status: 'Sent' }, 3), { kind: 'conflict', currentVersion: 4 });
    assert.deepEqual(decideMarkRead({ version: 4, readAt: now, status: 'Sent' }, 3), { kind: 'already-read' });
  });

  test('the version a notification_created frame announces (one ahead) marks only while its delivery is not recorded yet', () => {
    assert.deepEqual(decideMarkRead({ version: 1, readAt: null, status: 'Pending' }, 2), { kind: 'mark' });
    assert.deepEqual(decideMarkRead({ version: 2, readAt: null, status: 'Failed' }, 3), { kind: 'mark' });
    assert.deepEqual(decideMarkRead({ version: 2, readAt: null, status: 'Sent' }, 3), { kind: 'conflict', currentVersion: 2 });
    assert.deepEqual(decideMarkRead({ version: 1, readAt: null, status: 'Pending' }, 3), { kind: 'conflict', currentVersion: 1 });
  });
});

describe('webhook signature', () => {
  const secret = 'webhook-secret-0123456789';
  const body = '{"clientReference":"x","status":"delivered"}';
  const ts = Math.floor(now.getTime() / 1000);
  const check = (signature: string | undefined, timestamp: string | undefined, raw = body, at = now) =>
    checkWebhookSignature({ secret, rawBody: raw, signature, timestamp, now: at, maxSkewSeconds: 300 });
  test('a correct HMAC over timestamp and raw body passes', () => {
    assert.equal(check(signWebhook(secret, ts, body), String(ts)), 'ok');
  });
  test('missing, malformed, tampered, wrong-key and replayed signatures fail', () => {
    assert.equal(check(undefined, String(ts)), 'missing');
    assert.equal(check('md5=abc', String(ts)), 'malformed');
    assert.equal(check(signWebhook(secret, ts, body), String(ts), body.replace('delivered', 'failed')), 'mismatch');
    assert.equal(check(signWebhook('another-secret-0123456789', ts, body), String(ts)), 'mismatch');
    assert.equal(check(signWebhook(secret, ts, body), String(ts), body, new Date(now.getTime() + 301_000)), 'stale');
  });
});

describe('send intent (unconfirmed email)', () => {
  const row = (sendIntentCycle: number | null, o: { deliveryCycle?: number; status?: string; leaseExpiresAt?: Date | null } = {}) => ({
    deliveryCycle: o.deliveryCycle ?? 1,
    status: o.status ?? 'Failed',
    sendIntentCycle,
    leaseExpiresAt: o.leaseExpiresAt ?? null,
  });
  test('no intent, or one of an earlier delivery cycle, or a Sent row: the outcome is known', () => {
    assert.equal(isOutcomeUnknown(row(null), now), false);
    assert.equal(isOutcomeUnknown(row(1, { deliveryCycle: 2 }), now), false);
    assert.equal(isOutcomeUnknown(row(1, { status: 'Sent' }), now), false);
  });
  test('an intent of the current cycle is unknown once no live lease holds the row (a send in flight is not), and stays so with time', () => {
    assert.equal(isOutcomeUnknown(row(1, { leaseExpiresAt: new Date(now.getTime() + 1000) }), now), false, 'in flight');
    assert.equal(isOutcomeUnknown(row(1, { leaseExpiresAt: new Date(now.getTime() - 1000) }), now), true, 'its worker died');
    assert.equal(isOutcomeUnknown(row(1, { status: 'Pending' }), new Date(now.getTime() + 30 * 86_400_000)), true, 'no timeout resends it');
  });
});
