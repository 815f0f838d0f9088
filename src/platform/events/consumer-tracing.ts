import {
  contextFromHeaders,
  contextOf,
  failSpan,
  inSpan,
  linkTo,
  SpanKind,
  startSpan,
  tracingOn,
  withSpan,
  type Span,
} from '../observability/tracing.ts';
import type { IncomingMessage } from './bus.ts';
import type { ResolvedConsumer } from './consumer-definition.ts';
import type { EventEnvelope } from './envelope.ts';

/**
 * The consumer runner's spans: per message a `receive <topic>` span continuing the trace of its
 * `traceparent` header (a new trace without one), and under it a `handle <eventType>` span per
 * handler call, whose statements the pg instrumentation adds as children. The group's transaction
 * (BEGIN, inbox insert, COMMIT) runs in the first message's receive span; a batch handler call is
 * one `handle batch` span under the first fresh message, linked to the others' receive spans.
 * Undefined (and every helper a direct call) when tracing is off.
 */
export interface GroupTrace {
  consumer: string;
  /** One per message of the group, in order. */
  receive: Span[];
}

export function startGroupTrace(group: readonly { msg: IncomingMessage; event: EventEnvelope }[], consumer: ResolvedConsumer): GroupTrace | undefined {
  if (!tracingOn()) return undefined;
  const receive = group.map((d) =>
    startSpan(
      `receive ${consumer.topic}`,
      {
        'messaging.system': 'kafka',
        'messaging.operation.type': 'receive',
        'messaging.destination.name': consumer.topic,
        'messaging.destination.partition.id': String(d.msg.partition),
        'messaging.kafka.offset': Number(d.msg.offset),
        'messaging.message.id': d.event.messageId,
        'messaging.consumer.group.name': consumer.groupId,
        consumer: consumer.name,
        eventType: d.event.eventType,
      },
      { kind: SpanKind.CONSUMER, parent: contextFromHeaders(d.msg.headers) },
    ),
  );
  return { consumer: consumer.name, receive };
}

/** The group's transaction, in the first message's receive span. */
export function inGroupTransaction<T>(t: GroupTrace | undefined, fn: () => Promise<T>): Promise<T> {
  return t ? withSpan(t.receive[0]!, fn) : fn();
}

/** One handler call for message `index` of the group. */
export function inHandleSpan<T>(t: GroupTrace | undefined, index: number, eventType: string, fn: () => Promise<T>): Promise<T> {
  if (!t) return fn();
  return inSpan(`handle ${eventType}`, { consumer: t.consumer, eventType }, fn, { parent: contextOf(t.receive[index]!) });
}

/** One batch handler call for the group's messages at `indices`. */
export function inBatchHandleSpan<T>(t: GroupTrace | undefined, indices: readonly number[], fn: () => Promise<T>): Promise<T> {
  if (!t) return fn();
  const [first, ...rest] = indices.map((i) => t.receive[i]!);
  return inSpan(`${t.consumer} handle batch`, { consumer: t.consumer, messages: indices.length }, fn, {
    parent: contextOf(first!),
    links: rest.map(linkTo),
  });
}

/** What became of message `index` once its group committed (handled, duplicate, skipped). */
export function traceOutcome(t: GroupTrace | undefined, index: number, outcome: string): void {
  t?.receive[index]!.setAttribute('outcome', outcome);
}

/** Ends the receive spans: messages[done] failed with `error` (retried or dead-lettered next). */
export function endGroupTrace(t: GroupTrace | undefined, result: { done: number; error?: unknown }): void {
  if (!t) return;
  for (const [i, span] of t.receive.entries()) {
    if (i === result.done && result.error !== undefined) failSpan(span, result.error);
    span.end();
  }
}
