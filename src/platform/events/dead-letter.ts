import type { IncomingMessage, OutgoingMessage } from './bus.ts';
import type { HeaderValue } from './envelope.ts';
import type { PoisonMessageError } from './errors.ts';
import { dlqTopicOf } from './topics.ts';

export const DLQ_HEADER = {
  code: 'dlq-code',
  reason: 'dlq-reason',
  originTopic: 'dlq-origin-topic',
  originPartition: 'dlq-origin-partition',
  originOffset: 'dlq-origin-offset',
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
  return { topic: dlqTopicOf(msg.topic), key: msg.key, value: msg.value, headers };
}
