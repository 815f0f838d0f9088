/**
 * Send intents: at most once for a provider that cannot dedupe a resend (SMTP; seed 004 A4/AC6).
 * Before the call the worker records on the row which message of which DeliveryCycle it is about
 * to hand over, and when; a recorded outcome that settles the send (Sent, or a failure the provider
 * answered before it could have accepted the message) clears it. An intent of the row's current
 * cycle that stays — the worker died or was cut off mid-send, or the adapter answered
 * NTF_PROVIDER_OUTCOME_UNKNOWN (the reply to the end of DATA was lost or late) — means the message
 * may or may not have gone out. Such a row is never claimed again (delivery/sql.ts): it shows
 * `outcomeUnknown` in its REST view, is counted by `notifications_unconfirmed`, alerts
 * (NotificationsEmailUnconfirmed) and waits for the provider's delivery webhook (delivered → Sent;
 * failed → a new cycle) or the admin call that confirms it as sent or resends it
 * (unconfirmed/routes.ts). A late mail beats a duplicate one, and a person decides the rest.
 */

export interface IntentColumns {
  deliveryCycle: number;
  status: string;
  sendIntentCycle: number | null;
  leaseExpiresAt: Date | null;
}

/** Whether the row's current send may have gone out unrecorded: an intent of its cycle, not Sent, no live lease (not in flight). */
export function isOutcomeUnknown(row: IntentColumns, now: Date): boolean {
  if (row.sendIntentCycle !== row.deliveryCycle || row.status === 'Sent') return false;
  return row.leaseExpiresAt === null || row.leaseExpiresAt <= now;
}
