import { NTF, type BackoffKind, type ProviderErrorCode, type Status } from '../model.ts';

/**
 * The delivery rules as plain functions: backoff, retriable vs terminal, what a provider's answer
 * does to a notification, what a delivery receipt does, and the mark-read version guard.
 * Workers and routes only load rows, call these and store the result.
 */

export interface BackoffPolicy {
  kind: BackoffKind;
  /** Fixed: the delay; Exponential: the delay after the first attempt. */
  initialSeconds: number;
  /** Exponential: the delay never grows past this. */
  maxSeconds: number;
  /** Exponential: each further attempt waits this many times longer. */
  multiplier: number;
}

export interface RetryPolicy {
  maxAttempts: number;
  backoff: BackoffPolicy;
}

/** A 429's Retry-After is honoured, but never parks a notification for longer than a day. */
const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/** Delay before the next attempt, after `attemptsMade` (≥ 1) attempts have failed: backoff(n). */
export function backoffDelayMs(policy: BackoffPolicy, attemptsMade: number): number {
  if (policy.kind === 'Fixed') return policy.initialSeconds * 1000;
  const exponent = Math.max(0, attemptsMade - 1);
  const seconds = Math.min(policy.maxSeconds, policy.initialSeconds * policy.multiplier ** exponent);
  return Math.round(seconds * 1000);
}

const RETRIABLE: ReadonlySet<string> = new Set([NTF.transient, NTF.rateLimited, NTF.authFailed]);

/** 5xx, 429, timeouts, connection errors (and refused credentials, which an operator fixes) retry. */
export const isRetriable = (code: string): boolean => RETRIABLE.has(code);

/** What a provider adapter answers for one send. */
export type SendResult =
  | { ok: true; providerMessageId: string }
  | { ok: false; code: ProviderErrorCode; retryAfterMs?: number };

export interface DeliveryState {
  status: Status;
  attempts: number;
  terminal: boolean;
}

/** A notification past which no retry outcome may write: Sent (INV-NTF-5) or terminal Failed. */
export const isFinal = (s: Pick<DeliveryState, 'status' | 'terminal'>): boolean => s.status === 'Sent' || s.terminal;

export type AttemptDecision =
  | { kind: 'sent'; attempts: number; providerMessageId: string }
  | { kind: 'retry'; attempts: number; code: ProviderErrorCode; nextAttemptAt: Date }
  | { kind: 'terminal'; attempts: number; code: ProviderErrorCode; reason: 'max_attempts' | 'non_retriable' }
  /** The channel's adapter is declared but not built: no attempt is counted, the row waits (A3). */
  | { kind: 'skip'; reason: 'provider_not_implemented' }
  /** The row became final meanwhile (A5): a stale outcome never overwrites it. */
  | { kind: 'discard' };

/** The outcomes that end a delivery cycle and publish NotificationDispatchedEvent. */
export const endsCycle = (d: AttemptDecision): d is Extract<AttemptDecision, { kind: 'sent' | 'terminal' }> =>
  d.kind === 'sent' || d.kind === 'terminal';

/**
 * What one provider answer does to a notification in `state`. Attempts count within the current
 * delivery cycle; reaching MaxAttempts with a retriable error is terminal (A1), a non-retriable
 * error is terminal at once (A2).
 */
export function decideAttempt(state: DeliveryState, result: SendResult, policy: RetryPolicy, now: Date): AttemptDecision {
  if (isFinal(state)) return { kind: 'discard' };
  if (!result.ok && result.code === NTF.notImplemented) return { kind: 'skip', reason: 'provider_not_implemented' };
  const attempts = state.attempts + 1;
  if (result.ok) return { kind: 'sent', attempts, providerMessageId: result.providerMessageId };
  if (!isRetriable(result.code)) return { kind: 'terminal', attempts, code: result.code, reason: 'non_retriable' };
  if (attempts >= policy.maxAttempts) return { kind: 'terminal', attempts, code: result.code, reason: 'max_attempts' };
  const delay = Math.max(backoffDelayMs(policy.backoff, attempts), Math.min(result.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
  return { kind: 'retry', attempts, code: result.code, nextAttemptAt: new Date(now.getTime() + delay) };
}

/** A provider's delivery receipt, matched to a notification by NotificationId. */
export interface Receipt {
  outcome: 'delivered' | 'failed';
  /** The cycle the receipt is about (from the Idempotency-Key / Message-ID we sent); unknown = current. */
  deliveryCycle?: number;
}

export interface ReceiptState {
  status: Status;
  terminal: boolean;
  deliveryCycle: number;
  deliveredAt: Date | null;
}

export type ReceiptDecision =
  /** Sent and now confirmed delivered. */
  | { kind: 'confirm' }
  /** Accepted by the provider but never recorded (worker died, A4): the receipt records Sent. */
  | { kind: 'mark-sent' }
  /** Sent, but the provider could not deliver: back to Failed in a new cycle, due at once (AC7). */
  | { kind: 'reopen'; deliveryCycle: number }
  /** Sent, could not be delivered, and MaxReopens cycles have run: terminal Failed for manual review. */
  | { kind: 'terminal' }
  | { kind: 'ignore'; reason: 'stale_cycle' | 'already_confirmed' | 'final' | 'not_sent' };

export function decideReceipt(state: ReceiptState, receipt: Receipt, maxReopens: number): ReceiptDecision {
  if (receipt.deliveryCycle !== undefined && receipt.deliveryCycle !== state.deliveryCycle) {
    return { kind: 'ignore', reason: 'stale_cycle' };
  }
  if (receipt.outcome === 'delivered') {
    if (state.status === 'Sent') return state.deliveredAt ? { kind: 'ignore', reason: 'already_confirmed' } : { kind: 'confirm' };
    return state.terminal ? { kind: 'ignore', reason: 'final' } : { kind: 'mark-sent' };
  }
  if (state.status !== 'Sent') return { kind: 'ignore', reason: state.terminal ? 'final' : 'not_sent' };
  const reopensSoFar = state.deliveryCycle - 1;
  return reopensSoFar < maxReopens ? { kind: 'reopen', deliveryCycle: state.deliveryCycle + 1 } : { kind: 'terminal' };
}

export type ReadDecision = { kind: 'mark' } | { kind: 'already-read' } | { kind: 'conflict'; currentVersion: number };

/**
 * Mark-read with an expected version: the first committed mutation wins, the loser re-reads (A5).
 * Reading never touches Status, so a Sent notification stays Sent.
 */
export function decideMarkRead(state: { version: number; readAt: Date | null }, expectedVersion: number): ReadDecision {
  if (state.readAt) return { kind: 'already-read' };
  if (state.version !== expectedVersion) return { kind: 'conflict', currentVersion: state.version };
  return { kind: 'mark' };
}

/** The provider idempotency key: a resend in the same cycle is swallowed, a reopened cycle is not. */
export const idempotencyKeyOf = (notificationId: string, deliveryCycle: number): string => `${notificationId}:${deliveryCycle}`;

/** Reads `NotificationId:DeliveryCycle` back (webhooks echo our reference); null when it is not one. */
export function parseReference(reference: string): { notificationId: string; deliveryCycle?: number } | null {
  const m = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?::(\d{1,6}))?$/i.exec(reference.trim());
  if (!m) return null;
  return { notificationId: m[1]!.toLowerCase(), ...(m[2] ? { deliveryCycle: Number(m[2]) } : {}) };
}
