import type { IncomingMessage, OutgoingMessage } from './bus.ts';
import type { HeaderValue } from './envelope.ts';
import { RetriesExhaustedError } from './consumer-failures.ts';
import type { PoisonMessageError } from './errors.ts';
import { isMessageTooLarge } from './kafka-util.ts';
import { dlqTopicOf } from './topics.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';

export const DLQ_HEADER = {
  code: 'dlq-code',
  reason: 'dlq-reason',
  originTopic: 'dlq-origin-topic',
  originPartition: 'dlq-origin-partition',
  originOffset: 'dlq-origin-offset',
  /** The consumer that dead-lettered it (its inbox row is the one a replay deletes). */
  consumer: 'dlq-consumer',
  /** CONSUMER_RETRIES_EXHAUSTED only: the last error's class, its SQLSTATE if any, the attempts made. */
  errorClass: 'dlq-error-class',
  errorSqlState: 'dlq-error-sqlstate',
  attempts: 'dlq-attempts',
  /** Set on a copy too large for the DLQ topic: the original's key+value+header bytes, all three left out. */
  droppedBytes: 'dlq-dropped-bytes',
} as const;

/** A header's (first) value or a key as text, or null: Kafka hands them over as Buffers, arrays of them, or absent. */
export const wireText = (v: unknown): string | null => {
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined || one === null ? null : Buffer.isBuffer(one) ? one.toString('utf8') : String(one);
};

/** A message's headers without any dlq-* one (first values): what the original carried, for its copy or its replay. */
export function originalHeaders(raw: IncomingMessage['headers']): Record<string, HeaderValue> {
  const headers: Record<string, HeaderValue> = {};
  for (const [name, value] of Object.entries(raw)) {
    const one = Array.isArray(value) ? value[0] : value;
    if (one !== undefined && one !== null && !name.startsWith('dlq-')) headers[name] = one;
  }
  return headers;
}

/**
 * The dead-letter copy of a message: the original key, value and headers untouched (so it can be
 * replayed as is), plus why and where from. Goes to `<physical topic>.dlq`.
 */
export function deadLetterMessage(msg: IncomingMessage, err: PoisonMessageError, consumer?: string): OutgoingMessage {
  const headers = originalHeaders(msg.headers);
  headers[DLQ_HEADER.code] = err.code;
  headers[DLQ_HEADER.reason] = err.message.slice(0, EVENTS_DEFAULTS.deadLetterMaxReasonChars);
  headers[DLQ_HEADER.originTopic] = msg.topic;
  headers[DLQ_HEADER.originPartition] = String(msg.partition);
  headers[DLQ_HEADER.originOffset] = msg.offset;
  if (consumer !== undefined) headers[DLQ_HEADER.consumer] = consumer;
  if (err instanceof RetriesExhaustedError) {
    headers[DLQ_HEADER.errorClass] = err.errorClass.name;
    if (err.errorClass.sqlState) headers[DLQ_HEADER.errorSqlState] = err.errorClass.sqlState;
    headers[DLQ_HEADER.attempts] = String(err.attempts);
  }
  return { topic: dlqTopicOf(msg.topic), key: msg.key, value: msg.value, headers };
}

const bytes = (v: HeaderValue | null | undefined) => (v == null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length);

/**
 * Publishes the dead-letter copy. A message just under the source topic's size limit has a copy
 * over the DLQ topic's (the dlq-* headers are added): the broker refuses it every time, which
 * stalled the partition for good. Then a copy without the original key, value and headers goes
 * instead — the dlq-origin-* headers still point at the original in its topic. Returns whether
 * the copy had to be stripped.
 */
export async function publishDeadLetter(
  publish: (messages: readonly OutgoingMessage[]) => Promise<void>,
  msg: IncomingMessage,
  err: PoisonMessageError,
  consumer?: string,
): Promise<boolean> {
  const copy = deadLetterMessage(msg, err, consumer);
  try {
    await publish([copy]);
    return false;
  } catch (publishErr) {
    if (!isMessageTooLarge(publishErr)) throw publishErr;
  }
  const headers: Record<string, HeaderValue> = {};
  for (const [name, value] of Object.entries(copy.headers)) if (name.startsWith('dlq-')) headers[name] = value;
  let original = bytes(msg.key) + bytes(msg.value);
  for (const value of Object.values(msg.headers)) for (const one of [value].flat()) original += bytes(one);
  headers[DLQ_HEADER.droppedBytes] = String(original);
  await publish([{ topic: copy.topic, key: null, value: null, headers }]);
  return true;
}
