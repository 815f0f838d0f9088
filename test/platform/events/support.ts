import { sql, type SQL } from 'drizzle-orm';
import type { IncomingMessage } from '../../../src/platform/events/bus.ts';
import { envelopeToWire, type EventEnvelope } from '../../../src/platform/events/envelope.ts';
import type { JobContext } from '../../../src/platform/jobs/types.ts';
import { createLogger, type Logger } from '../../../src/platform/observability/logger.ts';
import { newId } from '../../../src/platform/time.ts';

/** Test log: silent unless TEST_LOG_LEVEL asks for it. */
export const testLog: Logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');

/** A job context for calling a job's run() directly. */
export function jobContext(signal: AbortSignal = new AbortController().signal): JobContext {
  return { jobRunId: newId(), signal, log: testLog, now: () => new Date() };
}

/** A port where nothing listens: a bus pointed at it sees Kafka as unreachable. */
export async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Handler side effects that live in the handler's transaction (as real handlers' do): a row per
 * handled message. In-memory logs would also show handler runs of rolled-back transactions.
 */
export async function createEffectsTable(pool: { query(sql: string): Promise<unknown> }): Promise<void> {
  await pool.query(`create table if not exists public.test_effects (seq bigserial primary key, consumer text not null, label text not null)`);
}

export async function recordEffect(tx: { execute(q: SQL): Promise<unknown> }, consumer: string, label: string): Promise<void> {
  await tx.execute(sql`insert into public.test_effects (consumer, label) values (${consumer}, ${label})`);
}

export async function effects(pool: { query(sql: string, values: unknown[]): Promise<{ rows: { label: string }[] }> }, consumer: string): Promise<string[]> {
  const { rows } = await pool.query(`select label from public.test_effects where consumer = $1 order by seq`, [consumer]);
  return rows.map((r) => r.label);
}

export type LabelPayload = { Label: string };
let nextOffset = 0;
/** The next offset of the test partition (a redelivery of a message under a new offset). */
export const nextTestOffset = (): string => String(nextOffset++);

/**
 * A well-formed incoming message of event type `E` on `pin.test.v1` (partition 0, increasing
 * offsets) whose payload is `{ Label }` and message id `msg-<label>`; `over` changes any envelope field.
 */
export function labelledMessage(label: string, over: Partial<EventEnvelope<LabelPayload>> = {}): IncomingMessage {
  const wire = envelopeToWire({
    messageId: `msg-${label}`,
    topic: 'pin.test.v1',
    key: 'k',
    eventType: 'E',
    contractVersion: 1,
    aggregateType: 'A',
    aggregateId: 'k',
    occurredAt: '2026-01-01T00:00:00.000Z',
    payload: { Label: label },
    ...over,
  });
  return { topic: 'pin.test.v1', partition: 0, offset: nextTestOffset(), key: wire.key, value: wire.value, headers: wire.headers };
}
