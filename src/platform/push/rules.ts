import { errorText } from '../errors/index.ts';
import { PUSH_DEFAULTS } from './defaults.ts';
/**
 * The RealtimeDispatchJob's decisions as plain functions (seed 000, step 5): what a claimed row
 * becomes after its push, the error text stored on it, and the order a batch is pushed in. The
 * retry delay set at claim is the kernel's backoff (platform/backoff).
 */

/** What pushing one claimed row came to. */
export type PushResult =
  | { kind: 'delivered' }
  /** Hub or backplane unavailable (or anything unexpected): try again after the backoff. */
  | { kind: 'transient'; error: string; code?: PushFailureCode }
  /** The referenced entity no longer exists: retrying cannot help. */
  | { kind: 'missing'; code: string }
  /** Not attempted: the run was asked to stop first. */
  | { kind: 'skipped' };

export type RowOutcome =
  | { status: 'Done' }
  | { status: 'Pending'; lastError: string }
  | { status: 'Quarantined'; lastError: string }
  /** Given back untouched (attempt not counted), claimable at once. */
  | { status: 'Released' };

/** `attempts` is the row's count after the claim's pre-increment. */
export function outcomeOf(result: PushResult, attempts: number, maxAttempts: number): RowOutcome {
  switch (result.kind) {
    case 'delivered':
      return { status: 'Done' };
    case 'missing':
      return { status: 'Quarantined', lastError: result.code };
    case 'skipped':
      return { status: 'Released' };
    case 'transient':
      return attempts >= maxAttempts ? { status: 'Quarantined', lastError: result.error } : { status: 'Pending', lastError: result.error };
  }
}

/**
 * Why a push failed, written at the start of its LastError ("RTO_BACKPLANE_DOWN: Error: Connection
 * is closed."), so the ops console and the requeue filter (lastErrorPrefix) tell the causes apart
 * (the error text alone began "Error" whatever the cause). Kept in last_error, the column there is.
 */
export const PUSH_FAILURE = {
  /** The cross-replica backplane (Redis) was down when the batch's outcomes were recorded. */
  backplaneDown: 'RTO_BACKPLANE_DOWN',
  /** The push did not finish within the push timeout (backplane up). */
  timeout: 'RTO_PUSH_TIMEOUT',
  /** The kind's owner could not build the frame from the row and what it points at. */
  frameBuild: 'RTO_FRAME_BUILD_FAILED',
  /** Anything else the hub threw. */
  failed: 'RTO_PUSH_FAILED',
} as const;
export type PushFailureCode = (typeof PUSH_FAILURE)[keyof typeof PUSH_FAILURE];

/** LastError of a failed push: its code, then the error's text, ≤ 512 chars. */
export const codedLastError = (code: PushFailureCode, text: string): string => `${code}: ${text}`.slice(0, PUSH_DEFAULTS.lastErrorMaxLength);

export const REF_NOT_FOUND = 'RTO_REF_NOT_FOUND';
/** LastError of a row quarantined at claim: it already used MaxAttempts (crashed claims, or MaxAttempts lowered). */
export const ATTEMPTS_EXHAUSTED = 'RTO_ATTEMPTS_EXHAUSTED';

/**
 * LastError of a failed push: class and code of the error plus its message (hub and backplane
 * errors carry no PII), ≤ 512 chars: the kernel's errorText of the error itself, with its code.
 */
export const lastErrorText = (err: unknown): string => (err instanceof Error ? errorText(err, { root: false, code: true, max: PUSH_DEFAULTS.lastErrorMaxLength }) : 'UnknownError');
