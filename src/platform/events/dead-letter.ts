import type { IncomingMessage, OutgoingMessage } from './bus.ts';
import type { HeaderValue } from './envelope.ts';
import { RetriesExhaustedError } from './consumer-failures.ts';
import type { PoisonMessageError } from './errors.ts';
import { dlqTopicOf } from './topics.ts';

export const DLQ_HEADER = {
  code: 'dlq-code',
  reason: 'dlq-reason',
  originTopic: 'dlq-origin-topic',
  originPartition: 'dlq-origin-partition',
  originOffset: 'dlq-origin-offset',
  /** CONSUMER_RETRIES_EXHAUSTED only: the last error's class, its SQLSTATE if any, the attempts made. */
  errorClass: 'dlq-error-class',
  errorSqlState: 'dlq-error-sqlstate',
  attempts: 'dlq-attempts',
} as const;

const MAX_REASON = 500;

/**
 * The dead-letter copy of a message: the original key, value and headers untouched (so it can be
 * replayed as is), plus why and where from. Goes to `<physical topic>.dlq`.
 */
export function deadLetterMessage(msg: IncomingMessage, err: PoisonMessageError): OutgoingMessage {
  const headers: Record<string, HeaderValue> = {};
  for (const [name, value] of Object.entries(msg.headers)) {
    const one = Array.isArray(value) ? value[0] : value;
    if (one !== undefined && !name.startsWith('dlq-')) headers[name] = one;
  }
  headers[DLQ_HEADER.code] = err.code;
  headers[DLQ_HEADER.reason] = err.message.slice(0, MAX_REASON);
  headers[DLQ_HEADER.originTopic] = msg.topic;
  headers[DLQ_HEADER.originPartition] = String(msg.partition);
  headers[DLQ_HEADER.originOffset] = msg.offset;
  if (err instanceof RetriesExhaustedError) {
    headers[DLQ_HEADER.errorClass] = err.errorClass.name;
    if (err.errorClass.sqlState) headers[DLQ_HEADER.errorSqlState] = err.errorClass.sqlState;
    headers[DLQ_HEADER.attempts] = String(err.attempts);
  }
  return { topic: dlqTopicOf(msg.topic), key: msg.key, value: msg.value, headers };
}
