import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { NOTIFICATIONS_DEFAULTS } from '../defaults.ts';

/**
 * The replay guard's SQL (notifications.webhook_replays): a signature is remembered in the
 * transaction of the receipt's effect, and forgotten once its timestamp has left the window.
 */

/** A receipt's signature as the guard stores it, and how long it must be remembered. */
export interface ReplayMark {
  signatureHash: string;
  expiresAt: Date;
}

/**
 * The mark of a signature that passed the check: its hash (hex case folded, since the check accepts
 * either) and the end of its timestamp's window plus the clock allowance.
 */
export function replayMarkOf(signature: string, timestampSeconds: number, maxSkewSeconds: number): ReplayMark {
  return {
    signatureHash: createHash('sha256').update(signature.trim().toLowerCase()).digest('hex'),
    expiresAt: new Date((timestampSeconds + maxSkewSeconds) * 1000 + NOTIFICATIONS_DEFAULTS.webhookReplayClockAllowanceMs),
  };
}

/**
 * Remembers a signature; false when it was already there (a replay). Run it in the receipt's
 * transaction: a concurrent insert of the same signature waits for that transaction and then finds
 * the row, and a receipt whose transaction rolls back leaves no mark, so its retry is applied.
 */
export async function rememberSignature(tx: Db, provider: string, mark: ReplayMark): Promise<boolean> {
  const { rows } = await query(tx, sql`
    insert into notifications.webhook_replays (provider, signature_hash, expires_at)
    values (${provider}, ${mark.signatureHash}, ${mark.expiresAt.toISOString()}::timestamptz)
    on conflict do nothing
    returning 1`);
  return rows.length === 1;
}

/** Deletes up to `limit` marks that expired before `now`; returns their keys. */
export async function deleteExpiredMarks(db: Db, now: Date, limit: number): Promise<{ id: string }[]> {
  const { rows } = await query<{ id: string }>(db, sql`
    delete from notifications.webhook_replays r
     using (select provider, signature_hash from notifications.webhook_replays
             where expires_at < ${now.toISOString()}::timestamptz
             order by expires_at limit ${limit}
             for update skip locked) expired
     where r.provider = expired.provider and r.signature_hash = expired.signature_hash
    returning r.provider || ':' || r.signature_hash as id`);
  return rows;
}
