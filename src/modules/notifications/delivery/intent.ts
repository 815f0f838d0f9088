import type { ClaimedRow } from './sql.ts';

/**
 * Send intents (seed 004 A4/AC6 for a provider that cannot dedupe: SMTP). Before the call, the
 * worker records on the row which message of which DeliveryCycle it is about to send, and when;
 * the recorded outcome clears it. A claimed row that still carries an intent of its current cycle
 * lost its outcome (the worker died, or the stop grace cut the send off): the message may or may
 * not have gone out. Resending at once would duplicate it whenever it did, so the row waits for
 * the provider's delivered webhook (which records Sent and clears the intent) or, failing that,
 * for NOTIFICATIONS_UNCONFIRMED_TIMEOUT_SECONDS after the intent; then it is resent once — a late
 * delivery instead of a lost one, at the price of a possible duplicate (README "Notifications").
 */

export type IntentState =
  /** No unresolved intent: send. */
  | { kind: 'none' }
  /** The last send's outcome is unknown and the timeout has not passed: hold the row until `until`. */
  | { kind: 'wait'; until: Date; messageId: string | null; since: Date }
  /** The last send's outcome is unknown and no webhook came within the timeout: resend. */
  | { kind: 'expired'; messageId: string | null; since: Date };

export function intentStateOf(
  row: Pick<ClaimedRow, 'deliveryCycle' | 'intentCycle' | 'intentAt' | 'intentMessageId'>,
  now: Date,
  timeoutMs: number,
): IntentState {
  if (row.intentCycle !== row.deliveryCycle || row.intentAt === null) return { kind: 'none' };
  const since = row.intentAt;
  const until = new Date(since.getTime() + timeoutMs);
  return now < until
    ? { kind: 'wait', until, messageId: row.intentMessageId, since }
    : { kind: 'expired', messageId: row.intentMessageId, since };
}
