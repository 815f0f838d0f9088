import { sql } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import { CONTRACT_VERSION_DEFAULT } from '../events/envelope.ts';
import { currentTraceparent } from '../observability/tracing.ts';
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
  /** Default CONTRACT_VERSION_DEFAULT. */
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
export async function enqueue(tx: Db, event: NewEvent | readonly NewEvent[]): Promise<string[]> {
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
    cols.version.push(e.contractVersion ?? CONTRACT_VERSION_DEFAULT);
    cols.aggType.push(e.aggregateType);
    cols.aggId.push(e.aggregateId);
    cols.at.push(occurredAt.toISOString());
    cols.corr.push(e.correlationId ?? null);
    cols.payload.push(payload);
  }
  const p = sql.param;
  // One writer, one context: every event of the call carries the span that wrote it.
  const traceparent = currentTraceparent();
  await query(
    tx,
    sql`with inserted as (
          insert into platform.outbox
            (id, topic, key, event_type, contract_version, aggregate_type, aggregate_id, occurred_at, correlation_id, payload, traceparent)
          select *, ${traceparent}::varchar from unnest(${p(ids)}::uuid[], ${p(cols.topic)}::varchar[], ${p(cols.key)}::varchar[], ${p(cols.type)}::varchar[],
                               ${p(cols.version)}::int[], ${p(cols.aggType)}::varchar[], ${p(cols.aggId)}::varchar[],
                               ${p(cols.at)}::timestamptz[], ${p(cols.corr)}::varchar[], ${p(cols.payload)}::jsonb[])
        )
        select pg_notify(${OUTBOX_CHANNEL}, '')`,
  );
  return ids;
}

/** SQL expressions (over the rows of `from`) for each column of an outbox row. */
export interface OutboxRowExpressions {
  id: string;
  topic: string;
  key: string;
  eventType: string;
  contractVersion: string;
  aggregateType: string;
  aggregateId: string;
  occurredAt: string;
  correlationId: string;
  payload: string;
  /** The rows' W3C traceparent (e.g. one per send of a batched statement); default null. */
  traceparent?: string;
}

/** A SQL string literal (for topic and event-type names built into a statement's text). */
export const sqlLiteral = (value: string): string => `'${value.replaceAll("'", "''")}'`;

/**
 * The outbox INSERT … SELECT, one event per row of `from`, as SQL text for a writer whose change
 * is ONE statement that also computes the events' payloads (the messenger's message send: Seq and
 * recipients are known only inside its statement), so change and events commit together without a
 * second statement. The kernel owns the table and its columns; the writer gives an expression per
 * column. The statement must also select `pg_notify(OUTBOX_CHANNEL, '')` when it wrote a row.
 */
export function outboxInsertSelect(e: OutboxRowExpressions, from: string): string {
  return `insert into platform.outbox
      (id, topic, key, event_type, contract_version, aggregate_type, aggregate_id, occurred_at, correlation_id, payload, traceparent)
    select ${e.id}, ${e.topic}, ${e.key}, ${e.eventType}, ${e.contractVersion}, ${e.aggregateType}, ${e.aggregateId}, ${e.occurredAt}, ${e.correlationId}, ${e.payload}, ${e.traceparent ?? 'null'}
      ${from}`;
}
