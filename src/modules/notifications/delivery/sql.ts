import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { leaseHolds, type Fence } from '../../../platform/jobs/index.ts';
import type { Channel, Status } from '../model.ts';

/**
 * The delivery SQL, one small function per statement over the `Db` the caller passes (graphile-worker
 * style). Claims take row locks with SKIP LOCKED and set a lease in the same statement, so two workers
 * never hold one row; the provider call happens after the claim's transaction has ended.
 */

/** A claimed notification as the workers use it. */
export interface ClaimedRow {
  id: string;
  recipientUserId: string;
  channel: Channel;
  recipientAddress: string | null;
  title: string;
  body: string;
  data: Record<string, unknown>;
  status: Status;
  attempts: number;
  terminal: boolean;
  deliveryCycle: number;
  version: number;
  createdAt: Date;
  correlationId: string | null;
  readAt: Date | null;
  /** The DeliveryCycle of the send intent left on the row (null: none); see intent.ts. */
  intentCycle: number | null;
  intentAt: Date | null;
  intentMessageId: string | null;
}

const RETURNING = sql`n.id, n.recipient_user_id as "recipientUserId", n.channel, n.recipient_address as "recipientAddress",
  n.title, n.body, n.data, n.status, n.attempts, n.terminal, n.delivery_cycle as "deliveryCycle", n.version,
  n.created_at as "createdAt", n.correlation_id as "correlationId", n.read_at as "readAt",
  n.send_intent_cycle as "intentCycle", n.send_intent_at as "intentAt", n.send_intent_message_id as "intentMessageId"`;

/**
 * A row whose current send may have gone out unrecorded (intent.ts): never claimed, never made
 * terminal, never aged as due — it waits for a delivery webhook or the admin call.
 */
export const UNRESOLVED_SEND = sql`n.send_intent_cycle is not distinct from n.delivery_cycle`;

export interface ClaimParams {
  now: Date;
  leaseOwner: string;
  leaseUntil: Date;
  /** Provider keys whose adapters are built and configured. */
  availableProviders: string[];
  limit: number;
  /** The single-runner run's lease (the retry worker): a run taken over meanwhile claims nothing. */
  fence?: Fence;
}

/**
 * Pending rows of enabled channels with a working adapter, oldest first. Rows of other channels are
 * not claimed at all, so they never fill a batch while they wait (A3).
 */
export async function claimPending(db: Db, p: ClaimParams): Promise<ClaimedRow[]> {
  const { rows } = await query<ClaimedRow>(
    db,
    sql`with picked as (
          select n.id from notifications.notifications n
            join notifications.channel_configs c on c.channel = n.channel
           where n.status = 'Pending' and not (${UNRESOLVED_SEND}) and c.is_enabled and c.provider_key = any(${sql.param(p.availableProviders)}::text[])
             and (n.lease_expires_at is null or n.lease_expires_at <= ${p.now})
           order by n.id
           limit ${p.limit}
           for update of n skip locked)
        update notifications.notifications n set lease_owner = ${p.leaseOwner}, lease_expires_at = ${p.leaseUntil}
          from picked where n.id = picked.id
        returning ${RETURNING}`,
  );
  return rows;
}

/**
 * The retry worker's claim (seed step 3): Failed, not terminal, NextAttemptAt ≤ now, Attempts <
 * MaxAttempts, channel enabled and implemented; earliest due first.
 */
export async function claimDueFailed(db: Db, p: ClaimParams): Promise<ClaimedRow[]> {
  const { rows } = await query<ClaimedRow>(
    db,
    sql`with picked as (
          select n.id from notifications.notifications n
            join notifications.channel_configs c on c.channel = n.channel
           where n.status = 'Failed' and not n.terminal and n.next_attempt_at <= ${p.now} and not (${UNRESOLVED_SEND})
             and n.attempts < c.max_attempts and c.is_enabled and c.provider_key = any(${sql.param(p.availableProviders)}::text[])
             and (n.lease_expires_at is null or n.lease_expires_at <= ${p.now}) and ${leaseHolds(p.fence)}
           order by n.next_attempt_at
           limit ${p.limit}
           for update of n skip locked)
        update notifications.notifications n set lease_owner = ${p.leaseOwner}, lease_expires_at = ${p.leaseUntil}
          from picked where n.id = picked.id
        returning ${RETURNING}`,
  );
  return rows;
}

export type ExhaustedRow = {
  id: string;
  recipientUserId: string;
  channel: Channel;
  /** After the update. */
  version: number;
  readAt: Date | null;
  deliveryCycle: number;
  lastError: string | null;
  attempts: number;
  correlationId: string | null;
};

const EXHAUSTED = (now: Date) => sql`
  n.status = 'Failed' and not n.terminal and n.attempts >= c.max_attempts and not (${UNRESOLVED_SEND})
  and (n.lease_expires_at is null or n.lease_expires_at <= ${now.toISOString()}::timestamptz)`;

/**
 * Failed rows that already used MaxAttempts (it was lowered after they failed) would wait forever,
 * outside every claim: they become terminal here, in the caller's transaction (with their cycle's
 * event). `id` narrows the statement to one row, for the one-at-a-time redo of a failed batch.
 */
export async function terminalizeExhausted(tx: Db, now: Date, limit: number, id?: string): Promise<ExhaustedRow[]> {
  const { rows } = await query<ExhaustedRow>(tx, sql`
    with exhausted as (
      select n.id from notifications.notifications n
        join notifications.channel_configs c on c.channel = n.channel
       where ${EXHAUSTED(now)} ${id === undefined ? sql`` : sql`and n.id = ${id}`}
       limit ${limit}
       for update of n skip locked)
    update notifications.notifications n
       set terminal = true, next_attempt_at = null, version = n.version + 1, updated_at = ${now.toISOString()}::timestamptz,
           lease_owner = null, lease_expires_at = null
      from exhausted where n.id = exhausted.id
    returning n.id, n.recipient_user_id as "recipientUserId", n.channel, n.version, n.read_at as "readAt",
              n.delivery_cycle as "deliveryCycle", n.last_error as "lastError", n.attempts, n.correlation_id as "correlationId"`);
  return rows;
}

/** The ids terminalizeExhausted would take, read without locks (for its one-at-a-time redo). */
export async function exhaustedIds(db: Db, now: Date, limit: number): Promise<string[]> {
  const { rows } = await query<{ id: string }>(db, sql`
    select n.id from notifications.notifications n
      join notifications.channel_configs c on c.channel = n.channel
     where ${EXHAUSTED(now)}
     limit ${limit}`);
  return rows.map((r) => r.id);
}

/** Gives claimed rows back untouched (stop signal, skipped rows), so the next run takes them at once. */
export async function releaseLeases(db: Db, ids: readonly string[], leaseOwner: string): Promise<void> {
  if (ids.length === 0) return;
  await query(db, sql`
    update notifications.notifications set lease_owner = null, lease_expires_at = null
     where id = any(${sql.param(ids)}::uuid[]) and lease_owner = ${leaseOwner}`);
}

/**
 * The send intent, in its own short transaction just before the provider call (not a domain
 * mutation: the version stays). False when the run no longer holds the row's lease, or its job's
 * lease was taken over (`fence`): then it must not send.
 */
export async function recordSendIntent(
  db: Db,
  i: { id: string; leaseOwner: string; deliveryCycle: number; messageId: string; at: Date },
  fence?: Fence,
): Promise<boolean> {
  const { rowCount } = await query(db, sql`
    update notifications.notifications
       set send_intent_cycle = ${i.deliveryCycle}, send_intent_message_id = ${i.messageId}, send_intent_at = ${i.at}
     where id = ${i.id} and lease_owner = ${i.leaseOwner} and delivery_cycle = ${i.deliveryCycle} and ${leaseHolds(fence)}`);
  return rowCount === 1;
}

/**
 * For a send with no intent to record (the provider dedupes by idempotency key): whether the run
 * still holds the row's lease and its job's lease, checked just before the provider call, so a
 * retry worker that froze and was taken over does not send rows the new holder now owns.
 */
export async function sendStillHeld(db: Db, i: { id: string; leaseOwner: string; deliveryCycle: number }, fence: Fence): Promise<boolean> {
  const { rowCount } = await query(db, sql`
    select 1 from notifications.notifications
     where id = ${i.id} and lease_owner = ${i.leaseOwner} and delivery_cycle = ${i.deliveryCycle} and ${leaseHolds(fence)}`);
  return rowCount === 1;
}

/** The new delivery state of one row, applied only if the row still has `version` (A5). */
export interface OutcomeWrite {
  id: string;
  version: number;
  status: 'Sent' | 'Failed';
  attempts: number;
  terminal: boolean;
  lastError: string | null;
  nextAttemptAt: string | null;
  providerMessageId: string | null;
  /** An unknown outcome keeps the send intent (intent.ts); every other outcome resolves it. */
  keepIntent: boolean;
}

/**
 * Records many outcomes in one statement. A row whose version moved on (mark-read, webhook, another
 * worker) or that became final is left alone and not returned: the caller re-reads it. Named: its
 * text never changes and every batch of both delivery jobs runs it, so each connection plans it once.
 */
export async function writeOutcomes(tx: Db, writes: readonly OutcomeWrite[], now: Date): Promise<Set<string>> {
  if (writes.length === 0) return new Set();
  const { rows } = await query<{ id: string }>(tx, sql`
    update notifications.notifications n set
      status = v.status, attempts = v.attempts, terminal = v.terminal, last_error = v."lastError",
      next_attempt_at = v."nextAttemptAt",
      provider_message_id = case when v.status = 'Sent' then v."providerMessageId" else n.provider_message_id end,
      sent_at = case when v.status = 'Sent' then ${now.toISOString()}::timestamptz else n.sent_at end,
      version = n.version + 1, updated_at = ${now.toISOString()}::timestamptz,
      lease_owner = null, lease_expires_at = null,
      send_intent_cycle = case when v."keepIntent" then n.send_intent_cycle end,
      send_intent_at = case when v."keepIntent" then n.send_intent_at end,
      send_intent_message_id = case when v."keepIntent" then n.send_intent_message_id end
    from jsonb_to_recordset(${JSON.stringify(writes)}::jsonb) as v(
      id uuid, version int, status text, attempts int, terminal boolean, "lastError" text,
      "nextAttemptAt" timestamptz, "providerMessageId" text, "keepIntent" boolean)
    where n.id = v.id and n.version = v.version and n.status <> 'Sent' and not n.terminal
    returning n.id`, { name: 'notifications_write_outcomes' });
  return new Set(rows.map((r) => r.id));
}

/** The row's current delivery state under a row lock, for re-applying an outcome that lost a race. */
export interface DeliveryState {
  status: Status;
  attempts: number;
  terminal: boolean;
  version: number;
  deliveryCycle: number;
  readAt: Date | null;
}

export async function lockDeliveryState(tx: Db, id: string): Promise<DeliveryState | undefined> {
  const { rows } = await query<DeliveryState>(tx, sql`
    select status, attempts, terminal, version, delivery_cycle as "deliveryCycle", read_at as "readAt"
      from notifications.notifications where id = ${id} for update`);
  return rows[0];
}

export interface HeldBackDue {
  channel: Channel;
  isEnabled: boolean;
  providerKey: string;
  rows: number;
}

/**
 * Due Failed rows the retry worker's claim passed over because their channel cannot send (disabled,
 * or its adapter is not implemented or not configured): what the worker skipped this run (A3).
 */
export async function countHeldBackDue(db: Db, now: Date, availableProviders: readonly string[]): Promise<HeldBackDue[]> {
  const at = now.toISOString();
  const { rows } = await query<HeldBackDue>(
    db,
    sql`select n.channel, c.is_enabled as "isEnabled", c.provider_key as "providerKey", count(*)::int as rows
          from notifications.notifications n
          join notifications.channel_configs c on c.channel = n.channel
         where n.status = 'Failed' and not n.terminal and n.next_attempt_at <= ${at}::timestamptz and not (${UNRESOLVED_SEND})
           and n.attempts < c.max_attempts
           and not (c.is_enabled and c.provider_key = any(${sql.param(availableProviders)}::text[]))
           and (n.lease_expires_at is null or n.lease_expires_at <= ${at}::timestamptz)
         group by n.channel, c.is_enabled, c.provider_key`,
  );
  return rows;
}
