import { sql, type SQL } from 'drizzle-orm';
import type { Tx } from '../db/index.ts';
import { newId } from '../time.ts';

/** NOTIFY channel that wakes the outbox publisher; delivered only when the transaction commits. */
export const OUTBOX_CHANNEL = 'platform_outbox';

/** An integration event to announce, written in the transaction of the change it describes. */
export interface NewEvent<P = unknown> {
  /** Product topic name (TOPICS in src/event-topics.ts). */
  topic: string;
  /** Message key; default aggregateId. */
  key?: string;
  eventType: string;
  /** Default 1. */
  contractVersion?: number;
  aggregateType: string;
  aggregateId: string;
  occurredAt: Date | string;
  correlationId?: string | null;
  /** Serialised as JSON, field names as given (PascalCase per the contracts). */
  payload: P;
  /** Message id (UUIDv7); generated when omitted. */
  messageId?: string;
}

/**
 * Writes the events to platform.outbox in the caller's transaction and wakes the publisher, in
 * ONE statement: the rows travel as one array per column (unnest), the NOTIFY rides in the same
 * statement. Nothing is published, and nobody is woken, unless the transaction commits.
 * Returns the message ids, in order.
 */
export async function enqueue(tx: Tx, event: NewEvent | readonly NewEvent[]): Promise<string[]> {
  const events = Array.isArray(event) ? (event as readonly NewEvent[]) : [event as NewEvent];
  if (events.length === 0) return [];
  const ids: string[] = [];
  const cols = { topic: [] as string[], key: [] as string[], type: [] as string[], version: [] as number[], aggType: [] as string[], aggId: [] as string[], at: [] as string[], corr: [] as (string | null)[], payload: [] as string[] };
  for (const e of events) {
    const occurredAt = new Date(e.occurredAt);
    if (Number.isNaN(occurredAt.getTime())) throw new Error(`outbox event ${e.eventType}: occurredAt is not a timestamp`);
    const payload = JSON.stringify(e.payload);
    if (payload === undefined) throw new Error(`outbox event ${e.eventType}: payload is not JSON-serialisable`);
    ids.push(e.messageId ?? newId());
    cols.topic.push(e.topic);
    cols.key.push(e.key ?? e.aggregateId);
    cols.type.push(e.eventType);
    cols.version.push(e.contractVersion ?? 1);
    cols.aggType.push(e.aggregateType);
    cols.aggId.push(e.aggregateId);
    cols.at.push(occurredAt.toISOString());
    cols.corr.push(e.correlationId ?? null);
    cols.payload.push(payload);
  }
  const p = sql.param;
  await tx.execute(sql`
    with inserted as (
      insert into platform.outbox
        (id, topic, key, event_type, contract_version, aggregate_type, aggregate_id, occurred_at, correlation_id, payload)
      select * from unnest(${p(ids)}::uuid[], ${p(cols.topic)}::varchar[], ${p(cols.key)}::varchar[], ${p(cols.type)}::varchar[],
                           ${p(cols.version)}::int[], ${p(cols.aggType)}::varchar[], ${p(cols.aggId)}::varchar[],
                           ${p(cols.at)}::timestamptz[], ${p(cols.corr)}::varchar[], ${p(cols.payload)}::jsonb[])
    )
    select pg_notify(${OUTBOX_CHANNEL}, '')`);
  return ids;
}

/**
 * The INSERT of one event as a CTE body, for a writer whose change is ONE statement that also
 * computes part of the payload (`payload`: a jsonb expression over that statement's rows, `from`:
 * the rows, e.g. "from msg"; no row → no event). The event commits with that statement; the
 * statement must also select `pg_notify(OUTBOX_CHANNEL, '')` when it wrote one.
 */
export function outboxInsert(event: Omit<NewEvent, 'payload'>, payload: SQL, from: SQL): { messageId: string; query: SQL } {
  const messageId = event.messageId ?? newId();
  const occurredAt = new Date(event.occurredAt);
  if (Number.isNaN(occurredAt.getTime())) throw new Error(`outbox event ${event.eventType}: occurredAt is not a timestamp`);
  const query = sql`insert into platform.outbox
      (id, topic, key, event_type, contract_version, aggregate_type, aggregate_id, occurred_at, correlation_id, payload)
    select ${messageId}::uuid, ${event.topic}, ${event.key ?? event.aggregateId}, ${event.eventType}, ${event.contractVersion ?? 1},
           ${event.aggregateType}, ${event.aggregateId}, ${occurredAt.toISOString()}::timestamptz, ${event.correlationId ?? null}, ${payload}
      ${from}`;
  return { messageId, query };
}
