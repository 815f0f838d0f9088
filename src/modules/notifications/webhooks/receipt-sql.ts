import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { NTF, type Channel, type Status } from '../model.ts';

/**
 * The delivery receipt's SQL (receipts.ts runs it in one transaction with the replay mark and the
 * outcome event): the row is locked first, then one update per decision, each a domain mutation
 * that bumps the version.
 */

export type LockedRow = {
  id: string;
  recipientUserId: string;
  channel: Channel;
  /** Each update below makes it version + 1. */
  version: number;
  readAt: Date | null;
  status: Status;
  terminal: boolean;
  deliveryCycle: number;
  deliveredAt: Date | null;
  providerMessageId: string | null;
  correlationId: string | null;
  unconfirmed: boolean;
};

/** The notification under a row lock, so a racing worker's outcome loses the version check (A5). */
export async function lockForReceipt(tx: Db, id: string): Promise<LockedRow | undefined> {
  const { rows } = await query<LockedRow>(tx, sql`
    select id, recipient_user_id as "recipientUserId", channel, version, read_at as "readAt", status, terminal, delivery_cycle as "deliveryCycle", delivered_at as "deliveredAt",
           provider_message_id as "providerMessageId", correlation_id as "correlationId",
           (send_intent_cycle is not distinct from delivery_cycle and status <> 'Sent') as unconfirmed
      from notifications.notifications where id = ${id} for update`);
  return rows[0];
}

/** Delivered, for a row already Sent. */
export async function confirmDelivery(tx: Db, id: string, now: Date): Promise<void> {
  await query(tx, sql`
    update notifications.notifications set delivered_at = ${now}, updated_at = ${now}, version = version + 1
     where id = ${id}`);
}

/** Delivered, for a row whose acceptance was never committed (A4): Sent now, its send intent resolved. */
export async function markSentByReceipt(tx: Db, id: string, providerMessageId: string, now: Date): Promise<void> {
  await query(tx, sql`
    update notifications.notifications
       set status = 'Sent', provider_message_id = ${providerMessageId}, delivered_at = ${now},
           sent_at = ${now}, next_attempt_at = null, last_error = null,
           send_intent_cycle = null, send_intent_at = null, send_intent_message_id = null,
           updated_at = ${now}, version = version + 1
     where id = ${id}`);
}

/** Failed delivery of a Sent row: Failed in the new DeliveryCycle, due at once, attempts from zero. */
export async function reopenInCycle(tx: Db, id: string, deliveryCycle: number, now: Date): Promise<void> {
  await query(tx, sql`
    update notifications.notifications
       set status = 'Failed', terminal = false, delivery_cycle = ${deliveryCycle}, attempts = 0,
           next_attempt_at = ${now}, last_error = ${NTF.deliveryFailed}, provider_message_id = null,
           delivered_at = null, lease_owner = null, lease_expires_at = null,
           send_intent_cycle = null, send_intent_at = null, send_intent_message_id = null,
           updated_at = ${now}, version = version + 1
     where id = ${id}`);
}

/** Failed delivery once the reopens are used up: terminal Failed. */
export async function failByReceipt(tx: Db, id: string, now: Date): Promise<void> {
  await query(tx, sql`
    update notifications.notifications
       set status = 'Failed', terminal = true, last_error = ${NTF.deliveryFailed}, next_attempt_at = null,
           delivered_at = null, send_intent_cycle = null, send_intent_at = null, send_intent_message_id = null, updated_at = ${now}, version = version + 1
     where id = ${id}`);
}
