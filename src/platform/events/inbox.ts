import type { Queryable, Tx } from '../db/index.ts';
import { inbox } from './schema.ts';

/**
 * Records messages as handled by a consumer, inside the handlers' transaction, in one statement.
 * Returns the keys that were new; a key already there is a redelivery and its handler is skipped.
 * A concurrent duplicate (another replica, mid-rebalance) blocks on the key until the first
 * transaction ends, then sees it.
 */
export async function recordInInbox(tx: Tx, idempotencyKeys: readonly string[], consumer: string): Promise<Set<string>> {
  if (idempotencyKeys.length === 0) return new Set();
  const rows = await tx
    .insert(inbox)
    .values(idempotencyKeys.map((idempotencyKey) => ({ idempotencyKey, consumer })))
    .onConflictDoNothing()
    .returning({ key: inbox.idempotencyKey });
  return new Set(rows.map((r) => r.key));
}

/** Deletes up to `limit` inbox rows processed before `cutoff`; returns how many went. */
export async function deleteInboxBefore(db: Queryable, cutoff: Date, limit: number): Promise<number> {
  const res = await db.query(
    `delete from platform.inbox where idempotency_key in (
       select idempotency_key from platform.inbox where processed_at < $1 limit $2)`,
    [cutoff, limit],
  );
  return res.rowCount ?? 0;
}
