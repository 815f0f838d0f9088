import { sql } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import type { IncomingMessage, OutgoingMessage } from './bus.ts';
import type { ResolvedConsumer } from './consumer-definition.ts';
import { DLQ_HEADER, originalHeaders, wireText } from './dead-letter.ts';
import { envelopeFromWire } from './envelope.ts';

/**
 * Replaying a dead letter (runbook ConsumerDeadLettered, once its cause is fixed): the original
 * message — key, value and headers as the consumer got them, message id included — is published
 * again to its origin topic, after the inbox row its consumer wrote when it dead-lettered it is
 * deleted, so that consumer handles it instead of skipping a duplicate. Every other consumer of
 * the topic still has its own inbox row and skips it. The same message id keeps a replay
 * idempotent end to end: a replay that is handled twice is handled once.
 *
 * The replay is claimed in platform.dead_letter_replays first, and the claim, the inbox delete and
 * the publish are one transaction: a publish the broker refuses undoes the claim (the dead letter
 * stays listed, to replay again); a second replay of the same record finds the claim and does
 * nothing, so it can never delete the inbox row of a message already handled after a replay.
 */


/** What a replay of this dead letter would do, or why it cannot be replayed. */
export type ReplayPlan =
  | { ok: true; original: OutgoingMessage; consumer: string; inboxKey: string | null }
  | { ok: false; why: string };

/**
 * The original message of a dead letter and the inbox row to delete. Not replayable: a copy
 * stripped of the original (too large for the DLQ topic: the original is only in its origin topic),
 * one whose origin topic no consumer of this app reads, and an older copy (no dlq-consumer header)
 * of a topic several consumers read, since which of them dead-lettered it is unknown.
 */
export function replayPlanOf(m: IncomingMessage, consumers: readonly ResolvedConsumer[]): ReplayPlan {
  const h = (name: string) => wireText(m.headers[name]);
  if (h(DLQ_HEADER.droppedBytes) !== null) return { ok: false, why: 'the dead letter holds no copy of the original (too large); replay it from its origin topic' };
  const originTopic = h(DLQ_HEADER.originTopic);
  const named = h(DLQ_HEADER.consumer);
  const readers = consumers.filter((c) => c.physicalTopic === originTopic && (named === null || c.name === named));
  if (originTopic === null || readers.length === 0) return { ok: false, why: `no consumer of this app reads ${originTopic ?? 'its origin topic'}` };
  if (readers.length > 1) return { ok: false, why: `several consumers read ${originTopic} and the dead letter does not say which one refused it` };
  const consumer = readers[0]!;
  const original: OutgoingMessage = { topic: originTopic, key: m.key, value: m.value, headers: originalHeaders(m.headers) };
  // An unreadable message (no envelope) or a type the consumer skips has no inbox row to delete.
  let inboxKey: string | null = null;
  try {
    const event = envelopeFromWire(m, consumer.topic);
    if (consumer.eventTypes.has(event.eventType)) inboxKey = consumer.idempotencyKey(event);
  } catch {
    // Unreadable: the consumer dead-lettered it without an inbox row.
  }
  return { ok: true, original, consumer: consumer.name, inboxKey };
}

export interface ReplayDeps {
  db: Db;
  publish(messages: readonly OutgoingMessage[]): Promise<void>;
}

/** Replays one dead letter (see the header); false when it had been replayed already. Throws when the publish fails (nothing changed then). */
export async function replayDeadLetter(deps: ReplayDeps, deadLetterId: string, plan: Extract<ReplayPlan, { ok: true }>, actor: string, now: Date): Promise<boolean> {
  return deps.db.transaction(async (tx) => {
    const claimed = await query<{ id: string }>(
      tx,
      sql`insert into platform.dead_letter_replays (dead_letter_id, replayed_at, actor) values (${deadLetterId}, ${now}, ${actor})
          on conflict do nothing returning dead_letter_id as id`,
    );
    if (claimed.rows.length === 0) return false;
    if (plan.inboxKey !== null) {
      await query(tx, sql`delete from platform.inbox where idempotency_key = ${plan.inboxKey} and consumer = ${plan.consumer}`);
    }
    await deps.publish([plan.original]);
    return true;
  });
}

/** Which of these dead letters were replayed already. */
export async function replayedAmong(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await query<{ id: string }>(
    db,
    sql`select dead_letter_id as id from platform.dead_letter_replays where dead_letter_id = any(${sql.param(ids)}::varchar[])`,
  );
  return new Set(rows.map((r) => r.id));
}
