import type { MessengerSettings } from '../settings.ts';
import type { ModuleDeps } from '../../../platform/module.ts';

/**
 * The RealtimeDispatchJob's decisions as plain functions (seed 000, steps 4–5): the retry delay set
 * at claim, what a claimed row becomes after its push, and the error text stored on it.
 */

export interface BackoffOptions {
  baseMs: number;
  factor: number;
  capMs: number;
  /** Random extra share of the delay: 0.2 → up to +20%. */
  jitter: number;
}

export interface DispatchSettings {
  batchSize: number;
  maxRunDurationMs: number;
  maxAttempts: number;
  backoff: BackoffOptions;
  /**
   * How long a run that found nothing more to claim stays for the next wake (a commit) before it
   * ends; 0 ends it at once. Default 0 (a run ends when it is done, as the seed describes).
   */
  idleWaitMs?: number;
}

/** The job's RealtimeDispatchOptions from the service's settings. */
export function dispatchSettingsOf(config: MessengerSettings): DispatchSettings {
  return {
    batchSize: config.MESSENGER_REALTIME_BATCH_SIZE,
    maxRunDurationMs: config.MESSENGER_REALTIME_MAX_RUN_DURATION_MS,
    maxAttempts: config.MESSENGER_REALTIME_MAX_ATTEMPTS,
    idleWaitMs: Math.min(config.MESSENGER_REALTIME_IDLE_WAIT_MS, config.MESSENGER_REALTIME_MAX_RUN_DURATION_MS),
    backoff: {
      baseMs: config.MESSENGER_REALTIME_BACKOFF_BASE_MS,
      factor: config.MESSENGER_REALTIME_BACKOFF_FACTOR,
      capMs: config.MESSENGER_REALTIME_BACKOFF_CAP_MS,
      jitter: config.MESSENGER_REALTIME_BACKOFF_JITTER,
    },
  };
}

/**
 * Delay after the claim of attempt `attempt` (1-based) before the row may be claimed again:
 * base × factor^(attempt−1), capped, plus jitter. Set at claim time (pre-increment), so a crash
 * before the outcome still waits this long before the retry.
 */
export function retryDelayMs(attempt: number, o: BackoffOptions, random: () => number = Math.random): number {
  const raw = o.baseMs * o.factor ** Math.max(0, attempt - 1);
  const capped = Math.min(o.capMs, raw);
  return Math.round(capped * (1 + o.jitter * random()));
}

/**
 * The delays without jitter, index k − 1 for the claim of attempt k (k = 1..maxAttempts): the claim
 * statement applies them (and the jitter) in SQL, so one statement claims a whole batch.
 */
export function backoffScheduleMs(o: BackoffOptions, maxAttempts: number): number[] {
  return Array.from({ length: maxAttempts }, (_, i) => retryDelayMs(i + 1, o, () => 0));
}

/** Fails fast at start on settings TypeBox bounds cannot express. */
export function dispatchSettingsProblems(s: DispatchSettings): string[] {
  const problems: string[] = [];
  if (!(s.batchSize > 0)) problems.push('BatchSize must be > 0');
  if (!(s.maxAttempts > 0)) problems.push('MaxAttempts must be > 0');
  if (!(s.backoff.baseMs > 0) || !(s.backoff.capMs > 0) || !(s.backoff.factor >= 1)) problems.push('backoff must be > 0');
  if (s.backoff.capMs < s.backoff.baseMs) problems.push('MESSENGER_REALTIME_BACKOFF_CAP_MS must be ≥ MESSENGER_REALTIME_BACKOFF_BASE_MS');
  return problems;
}

/** What pushing one claimed row came to. */
export type PushResult =
  | { kind: 'delivered' }
  /** Hub or backplane unavailable (or anything unexpected): try again after the backoff. */
  | { kind: 'transient'; error: string }
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

export const REF_NOT_FOUND = 'RTO_REF_NOT_FOUND';
/** LastError of a row quarantined at claim: it already used MaxAttempts (crashed claims, or MaxAttempts lowered). */
export const ATTEMPTS_EXHAUSTED = 'RTO_ATTEMPTS_EXHAUSTED';
const LAST_ERROR_MAX = 512;

/** Class and code of an error (plus its message, which for hub/backplane errors carries no PII), ≤ 512 chars. */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return 'UnknownError'.slice(0, LAST_ERROR_MAX);
  const code = (err as { code?: unknown }).code;
  const head = typeof code === 'string' || typeof code === 'number' ? `${err.name}[${code}]` : err.name;
  return `${head}: ${err.message}`.slice(0, LAST_ERROR_MAX);
}

/**
 * The order a claimed batch is pushed in: id (commit) order, except that each chat's
 * MessageReceived rows take their slots in Seq order. A send's row id is drawn before its statement
 * waits for the chat lock, so two concurrent sends can get ids in the opposite order of their Seqs;
 * pushing them by Seq spares the client a gap refill.
 */
export function pushOrder<T extends { kind: string; chatId: string | null; seq: number | null }>(rows: readonly T[]): T[] {
  const out = [...rows];
  const slots = new Map<string, number[]>();
  out.forEach((r, i) => {
    if (r.kind !== 'MessageReceived' || r.chatId === null || r.seq === null) return;
    const list = slots.get(r.chatId);
    if (list) list.push(i);
    else slots.set(r.chatId, [i]);
  });
  for (const indices of slots.values()) {
    if (indices.length < 2) continue;
    const sorted = indices.map((i) => rows[i]!).sort((a, b) => a.seq! - b.seq!);
    indices.forEach((slot, k) => (out[slot] = sorted[k]!));
  }
  return out;
}
