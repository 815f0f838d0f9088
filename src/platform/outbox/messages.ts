import type { OutgoingMessage } from '../events/bus.ts';
import { envelopeHeaders } from '../events/envelope.ts';
import { withPrefix } from '../events/topics.ts';
import type { PendingRow } from './sql.ts';
import { errorText } from '../errors/index.ts';
import { kafkaErrorTypes, kafkaShownError } from '../events/kafka-util.ts';

/** Pure rules of the publisher, tested without a database or a broker. */

/** The wire message of an outbox row; the test-only prefix is applied here, rows keep product names. */
export function rowToMessage(row: PendingRow, topicPrefix = ''): OutgoingMessage {
  return {
    topic: withPrefix(topicPrefix, row.topic),
    key: row.key,
    value: row.payload,
    headers: envelopeHeaders({
      messageId: row.id,
      eventType: row.eventType,
      contractVersion: row.contractVersion,
      aggregateType: row.aggregateType,
      aggregateId: row.aggregateId,
      occurredAt: row.occurredAt,
      ...(row.correlationId ? { correlationId: row.correlationId } : {}),
    }),
  };
}

/** Order is kept per key within a topic (a key's partition is per topic). */
export const orderingKey = (row: Pick<PendingRow, 'topic' | 'key'>): string => `${row.topic}\u0000${row.key}`;

/**
 * Rows whose key already failed in this run stay back, so nothing overtakes the failed row; so do
 * all rows of a topic the broker refused as a whole (a blocked topic blocks each of its keys).
 */
export function splitHeldBack<R extends Pick<PendingRow, 'topic' | 'key'>>(
  rows: readonly R[],
  blockedKeys: ReadonlySet<string>,
  blockedTopics: ReadonlySet<string> = new Set(),
): { sendable: R[]; heldBack: R[] } {
  const sendable: R[] = [];
  const heldBack: R[] = [];
  for (const row of rows) (blockedTopics.has(row.topic) || blockedKeys.has(orderingKey(row)) ? heldBack : sendable).push(row);
  return { sendable, heldBack };
}

/**
 * Kafka error types that concern the topic, not the message: every other row of that topic would
 * fail the same way (kafkajs src/protocol/error.js). With topic auto-creation on, a missing topic
 * is created instead and never shows up here.
 */
const TOPIC_LEVEL_ERROR_TYPES = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'TOPIC_AUTHORIZATION_FAILED', 'INVALID_TOPIC_EXCEPTION']);

/** True when a send failed because of its topic; either Kafka client wraps the protocol error (kafkaErrorTypes reads both). */
export function isTopicLevelError(err: unknown): boolean {
  for (const t of kafkaErrorTypes(err)) if (TOPIC_LEVEL_ERROR_TYPES.has(t)) return true;
  return false;
}

/** The error text stored in last_error and logged: name and message of the send's own error only (no payload), truncated. */
export function publishErrorText(err: unknown): string {
  // @platformatic/kafka's wrappers say only "Producing messages failed."; its root error has the broker's reason and its code.
  const shown = kafkaShownError(err);
  return errorText(shown, { root: false, code: shown !== err });
}
