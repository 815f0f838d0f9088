import { PoisonMessageError } from './errors.ts';

/** An integration event as producers write it and handlers receive it (docs/architecture.md, "Event contracts"). */
export interface EventEnvelope<P = unknown> {
  /** UUIDv7; the consumers' dedupe key. */
  messageId: string;
  /** The product topic name (never the test prefix). */
  topic: string;
  /** Partition key: the aggregate id as a string. */
  key: string;
  /** The seed's class name, e.g. `UserUpsertedKafkaEvent`. */
  eventType: string;
  contractVersion: number;
  aggregateType: string;
  aggregateId: string;
  /** ISO-8601 UTC. */
  occurredAt: string;
  correlationId?: string;
  /** PascalCase fields exactly as the producer gave them. */
  payload: P;
}

/** The contract version an event or a consumer states when it states none. */
export const CONTRACT_VERSION_DEFAULT = 1;

export const HEADER = {
  messageId: 'message-id',
  eventType: 'event-type',
  contractVersion: 'contract-version',
  aggregateType: 'aggregate-type',
  aggregateId: 'aggregate-id',
  occurredAt: 'occurred-at',
  correlationId: 'correlation-id',
} as const;

/** Stable codes of messages the runner cannot read; they end up in the `dlq-code` header. */
export const POISON = {
  emptyValue: 'ENVELOPE_EMPTY_VALUE',
  invalidJson: 'ENVELOPE_INVALID_JSON',
  missingHeader: 'ENVELOPE_MISSING_HEADER',
  invalidHeader: 'ENVELOPE_INVALID_HEADER',
} as const;

export type HeaderValue = Buffer | string;
/** Headers as kafkajs hands them over: Buffers, occasionally repeated. */
export type RawHeaders = Record<string, HeaderValue | HeaderValue[] | undefined>;

/** A message as it travels on the bus. */
export interface WireMessage {
  key: string | Buffer | null;
  value: string | Buffer | null;
  headers: Record<string, HeaderValue>;
}

/** Metadata headers of an envelope; apart from the value so the outbox can send its jsonb text as is. */
export function envelopeHeaders(e: Omit<EventEnvelope, 'payload' | 'topic' | 'key'>): Record<string, string> {
  const headers: Record<string, string> = {
    [HEADER.messageId]: e.messageId,
    [HEADER.eventType]: e.eventType,
    [HEADER.contractVersion]: String(e.contractVersion),
    [HEADER.aggregateType]: e.aggregateType,
    [HEADER.aggregateId]: e.aggregateId,
    [HEADER.occurredAt]: e.occurredAt,
  };
  if (e.correlationId) headers[HEADER.correlationId] = e.correlationId;
  return headers;
}

export function envelopeToWire(e: EventEnvelope): WireMessage {
  return { key: e.key, value: JSON.stringify(e.payload), headers: envelopeHeaders(e) };
}

const text = (v: HeaderValue | HeaderValue[] | undefined): string | undefined => {
  const one = Array.isArray(v) ? v[0] : v;
  if (one === undefined) return undefined;
  return typeof one === 'string' ? one : one.toString('utf8');
};

/** Longest message id accepted: `<consumer>:<messageId>` must fit the inbox key (300). */
const MAX_MESSAGE_ID = 128;

function required(headers: RawHeaders, name: string): string {
  const value = text(headers[name])?.trim();
  if (!value) throw new PoisonMessageError(POISON.missingHeader, `missing header ${name}`);
  return value;
}

/**
 * Reads a message off the wire. Anything that is not a readable envelope throws a
 * PoisonMessageError, so the runner dead-letters it instead of retrying it forever.
 * `topic` is the product topic name the consumer subscribed to.
 */
export function envelopeFromWire<P = unknown>(
  raw: { key: Buffer | string | null | undefined; value: Buffer | string | null | undefined; headers?: RawHeaders },
  topic: string,
): EventEnvelope<P> {
  const headers = raw.headers ?? {};
  const messageId = required(headers, HEADER.messageId);
  if (messageId.length > MAX_MESSAGE_ID) {
    throw new PoisonMessageError(POISON.invalidHeader, `header ${HEADER.messageId} longer than ${MAX_MESSAGE_ID}`);
  }
  const eventType = required(headers, HEADER.eventType);
  const versionText = required(headers, HEADER.contractVersion);
  const contractVersion = Number(versionText);
  if (!/^\d{1,9}$/.test(versionText) || contractVersion < 1) {
    throw new PoisonMessageError(POISON.invalidHeader, `header ${HEADER.contractVersion} is not a positive integer`);
  }
  const aggregateType = required(headers, HEADER.aggregateType);
  const aggregateId = required(headers, HEADER.aggregateId);
  const occurred = new Date(required(headers, HEADER.occurredAt));
  if (Number.isNaN(occurred.getTime())) {
    throw new PoisonMessageError(POISON.invalidHeader, `header ${HEADER.occurredAt} is not a timestamp`);
  }
  const correlationId = text(headers[HEADER.correlationId])?.trim() || undefined;

  if (raw.value === null || raw.value === undefined || raw.value.length === 0) {
    throw new PoisonMessageError(POISON.emptyValue, 'message has no value');
  }
  let payload: P;
  try {
    payload = JSON.parse(typeof raw.value === 'string' ? raw.value : raw.value.toString('utf8')) as P;
  } catch {
    // The parser's message would quote the body; the reason header must not.
    throw new PoisonMessageError(POISON.invalidJson, 'message value is not JSON');
  }
  const key = raw.key === null || raw.key === undefined ? '' : typeof raw.key === 'string' ? raw.key : raw.key.toString('utf8');

  return {
    messageId,
    topic,
    key: key || aggregateId,
    eventType,
    contractVersion,
    aggregateType,
    aggregateId,
    occurredAt: occurred.toISOString(),
    ...(correlationId ? { correlationId } : {}),
    payload,
  };
}
