import { backoffDelayMs, type Backoff } from '../../../platform/backoff/index.ts';
import { NTF, type BackoffKind, type ProviderErrorCode, type Status } from '../model.ts';
import type { SendResult } from '../providers/port.ts';
import { NOTIFICATIONS_DEFAULTS } from '../defaults.ts';

/**
 * The rules of one delivery attempt as plain functions: backoff, retriable vs terminal, and what a
 * provider's answer does to a notification. The workers only load rows, call these and store the
 * result.
 */

/** A channel's RetryBackoff as the channel_configs table stores it. */
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

/** The kernel's backoff for a channel's policy: Fixed is factor 1; neither kind has jitter. */
export function backoffOf(policy: BackoffPolicy): Backoff {
  const baseMs = policy.initialSeconds * 1000;
  return policy.kind === 'Fixed'
    ? { baseMs, factor: 1, capMs: baseMs, jitter: 0 }
    : { baseMs, factor: policy.multiplier, capMs: policy.maxSeconds * 1000, jitter: 0 };
}

/** Delay before the next attempt, after `attemptsMade` (≥ 1) attempts have failed: backoff(n). */
export const retryDelayMs = (policy: BackoffPolicy, attemptsMade: number): number => backoffDelayMs(backoffOf(policy), attemptsMade, () => 0);

const RETRIABLE: ReadonlySet<string> = new Set([NTF.transient, NTF.rateLimited, NTF.authFailed]);

/** 5xx, 429, timeouts, connection errors (and refused credentials, which an operator fixes) retry. */
export const isRetriable = (code: string): boolean => RETRIABLE.has(code);

export interface DeliveryState {
  status: Status;
  attempts: number;
  terminal: boolean;
}

/** A notification past which no retry outcome may write: Sent (never rolled back, INV-NTF-5) or terminal Failed. */
export const isFinal = (s: Pick<DeliveryState, 'status' | 'terminal'>): boolean => s.status === 'Sent' || s.terminal;

export type AttemptDecision =
  | { kind: 'sent'; attempts: number; providerMessageId: string }
  | { kind: 'retry'; attempts: number; code: ProviderErrorCode; nextAttemptAt: Date }
  | { kind: 'terminal'; attempts: number; code: ProviderErrorCode; reason: 'max_attempts' | 'non_retriable' }
  /**
   * The provider may have accepted the message (intent.ts): Failed with NTF_PROVIDER_OUTCOME_UNKNOWN,
   * no next attempt, the send intent kept. Not an attempt: nobody knows that it failed.
   */
  | { kind: 'unknown'; attempts: number }
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
  if (!result.ok && result.code === NTF.outcomeUnknown) return { kind: 'unknown', attempts: state.attempts };
  const attempts = state.attempts + 1;
  if (result.ok) return { kind: 'sent', attempts, providerMessageId: result.providerMessageId };
  if (!isRetriable(result.code)) return { kind: 'terminal', attempts, code: result.code, reason: 'non_retriable' };
  if (attempts >= policy.maxAttempts) return { kind: 'terminal', attempts, code: result.code, reason: 'max_attempts' };
  const delay = Math.max(retryDelayMs(policy.backoff, attempts), Math.min(result.retryAfterMs ?? 0, NOTIFICATIONS_DEFAULTS.maxRetryAfterMs));
  return { kind: 'retry', attempts, code: result.code, nextAttemptAt: new Date(now.getTime() + delay) };
}

/** The provider idempotency key: a resend in the same cycle is swallowed, a reopened cycle is not. */
export const idempotencyKeyOf = (notificationId: string, deliveryCycle: number): string => `${notificationId}:${deliveryCycle}`;
