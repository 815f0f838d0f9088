import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { NTF, type Channel, type Status } from '../model.ts';

/**
 * The SQL of unconfirmed sends (delivery/intent.ts): rows whose current send may have gone out
 * unrecorded — an intent of the current cycle, not Sent, not in flight (no live lease).
 */
const UNCONFIRMED = (now: Date) => sql`
  send_intent_cycle is not distinct from delivery_cycle and status <> 'Sent'
  and (lease_expires_at is null or lease_expires_at <= ${now.toISOString()}::timestamptz)`;

export interface UnconfirmedRow {
  id: string;
  channel: Channel;
  status: Status;
  deliveryCycle: number;
  attempts: number;
  /** The Message-ID the worker was about to hand over, to look up in the mail server's log. */
  messageId: string | null;
  since: Date | null;
}

/** The oldest unconfirmed sends first, for the runbook. */
export async function listUnconfirmed(db: Db, now: Date, limit: number): Promise<UnconfirmedRow[]> {
  const { rows } = await query<UnconfirmedRow>(db, sql`
    select id, channel, status, delivery_cycle as "deliveryCycle", attempts, send_intent_message_id as "messageId", send_intent_at as since
      from notifications.notifications where ${UNCONFIRMED(now)}
     order by send_intent_at, id
     limit ${limit}`);
  return rows;
}

/** The row after a resolution, for its events. */
export interface ResolvedRow {
  id: string;
  recipientUserId: string;
  channel: Channel;
  status: Status;
  deliveryCycle: number;
  providerMessageId: string | null;
  lastError: string | null;
  readAt: Date | null;
  version: number;
  correlationId: string | null;
}

const RESOLVED = sql`id, recipient_user_id as "recipientUserId", channel, status, delivery_cycle as "deliveryCycle",
  provider_message_id as "providerMessageId", last_error as "lastError", read_at as "readAt", version, correlation_id as "correlationId"`;

/** Confirmed by an operator as delivered (the mail server's log shows it): Sent with the intended Message-ID. */
export async function confirmUnconfirmedAsSent(tx: Db, id: string, now: Date): Promise<ResolvedRow | undefined> {
  const { rows } = await query<ResolvedRow>(tx, sql`
    update notifications.notifications
       set status = 'Sent', provider_message_id = coalesce(send_intent_message_id, id::text || ':' || delivery_cycle),
           sent_at = ${now}, last_error = null, next_attempt_at = null, lease_owner = null, lease_expires_at = null,
           send_intent_cycle = null, send_intent_at = null, send_intent_message_id = null,
           updated_at = ${now}, version = version + 1
     where id = ${id} and ${UNCONFIRMED(now)}
    returning ${RESOLVED}`);
  return rows[0];
}

/**
 * Judged by an operator as not delivered: the intent is dropped and the row is due at once for the
 * retry worker, in the same cycle (same Message-ID), without using an attempt.
 */
export async function resendUnconfirmed(tx: Db, id: string, now: Date): Promise<ResolvedRow | undefined> {
  const { rows } = await query<ResolvedRow>(tx, sql`
    update notifications.notifications
       set status = 'Failed', terminal = false, last_error = ${NTF.outcomeUnknown}, next_attempt_at = ${now},
           lease_owner = null, lease_expires_at = null,
           send_intent_cycle = null, send_intent_at = null, send_intent_message_id = null,
           updated_at = ${now}, version = version + 1
     where id = ${id} and ${UNCONFIRMED(now)}
    returning ${RESOLVED}`);
  return rows[0];
}
