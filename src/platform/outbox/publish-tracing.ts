import type { OutgoingMessage } from '../events/bus.ts';
import { contextFromTraceparent, failSpan, injectSpan, SpanKind, startSpan, tracingOn, type Span } from '../observability/tracing.ts';
import type { PendingRow } from './sql.ts';

/**
 * Context travels with events: each row's send is a producer span continuing the trace of the
 * span that enqueued it (its stored traceparent; the publisher's run for a row without one), and
 * that span's traceparent goes out as the message header, so the consumer continues the same
 * trace. The whole batch still goes out in one request; only the spans are per row.
 */
export async function publishTraced(
  publish: (messages: readonly OutgoingMessage[]) => Promise<void>,
  rows: readonly PendingRow[],
  messages: OutgoingMessage[],
): Promise<void> {
  if (!tracingOn()) return publish(messages);
  const spans: Span[] = rows.map((row, i) => {
    const span = startSpan(
      `send ${row.topic}`,
      {
        'messaging.system': 'kafka',
        'messaging.operation.type': 'send',
        'messaging.destination.name': row.topic,
        'messaging.message.id': row.id,
        'messaging.kafka.message.key': row.key,
        eventType: row.eventType,
      },
      { kind: SpanKind.PRODUCER, parent: contextFromTraceparent(row.traceparent) },
    );
    injectSpan(span, messages[i]!.headers);
    return span;
  });
  try {
    await publish(messages);
  } catch (err) {
    for (const span of spans) failSpan(span, err);
    throw err;
  } finally {
    for (const span of spans) span.end();
  }
}
