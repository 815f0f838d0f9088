import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { v7 as uuidv7 } from 'uuid';
import { query, type Db } from '../../../platform/db/index.ts';
import { enqueue, type NewEvent } from '../../../platform/outbox/index.ts';

/**
 * Writing UserAccessChanged events so that, per user, their outbox order is the order of the
 * commits that decided them (else a stale snapshot can land last). The publisher sends each key in outbox id order,
 * so two things must hold:
 *
 * 1. Every writer of a user's access event holds a lock on the user's row until it commits:
 *    grant, revoke, expiry and archive take it FOR UPDATE, the fan-out (queued and inline) FOR
 *    SHARE. A writer that waits for another's lock reads — and so announces — its committed state.
 * 2. The ids are generated AFTER that lock, from ONE clock for every replica: the database's
 *    clock_timestamp() at microsecond precision (UUIDv7 with the sub-millisecond fraction in rand_a,
 *    RFC 9562 §6.2 method 3). An id made in the application would not do: two replicas' UUIDv7s of
 *    the same millisecond sort by their random bits, and hosts' clocks drift — so an event decided
 *    after another's commit could still sort before it.
 *
 * The caller must already hold its users' row locks when it calls this.
 */
export async function enqueueAccessEvents(tx: Db, events: readonly NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const ids = commitOrderedIds(await databaseClockMicros(tx), events.length);
  return enqueue(
    tx,
    events.map((e, i) => ({ ...e, messageId: ids[i]! })),
  );
}

/** The database server's clock now (not the transaction's start), in microseconds since the epoch. */
export async function databaseClockMicros(tx: Db): Promise<bigint> {
  const { rows } = await query<{ us: string }>(tx, sql`select (extract(epoch from clock_timestamp()) * 1000000)::bigint::text as us`);
  return BigInt(rows[0]!.us);
}

/** 2^20 ids fit one clock reading (the counter below the sub-millisecond fraction). */
const MAX_IDS_PER_READING = 1 << 20;

/**
 * `count` UUIDv7s for one clock reading, ascending: 48 bits of milliseconds, 12 bits of the
 * sub-millisecond fraction (distinct for distinct microseconds), a 20-bit counter (their order
 * within the call), then 42 random bits (distinct across transactions of the same microsecond).
 */
export function commitOrderedIds(clockMicros: bigint, count: number): string[] {
  if (count > MAX_IDS_PER_READING) throw new Error(`commitOrderedIds: at most ${MAX_IDS_PER_READING} ids per clock reading (asked ${count})`);
  const msecs = Number(clockMicros / 1000n);
  const fraction = Math.floor((Number(clockMicros % 1000n) * 4096) / 1000);
  return Array.from({ length: count }, (_, i) => uuidv7({ msecs, seq: fraction * MAX_IDS_PER_READING + i, random: randomBytes(16) }));
}
