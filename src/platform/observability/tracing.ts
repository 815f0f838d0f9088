import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  INVALID_SPAN_CONTEXT,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';

/**
 * The kernel's spans (job runs, batches, rows, consumed messages, published outbox rows) through
 * the OpenTelemetry API only; the SDK that records them is started by tracing-sdk.ts when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set. Until then every helper here is one boolean test and a
 * direct call: no span object, no context switch, no attribute object is built by the kernel.
 */

export type { Attributes, Context, Span };
export { SpanKind };

const tracer = trace.getTracer('pin-platform-jobs');
let enabled = false;

/** True once the SDK is started (tracing-sdk.ts). */
export const tracingOn = (): boolean => enabled;

/** Called by tracing-sdk.ts only. */
export function setTracingOn(on: boolean): void {
  enabled = on;
}

/** The span handed to a callback while tracing is off: records nothing, allocated once. */
const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export interface SpanOptions {
  kind?: SpanKind;
  /** Start a new trace instead of continuing the active one (timer ticks, wakes from another request). */
  root?: boolean;
  /** The parent instead of the active context (a message's traceparent). */
  parent?: Context;
  links?: Link[];
}

/**
 * Runs `fn` inside a new active span, so the spans it causes (pg, ioredis, the kernel's own) and
 * its log lines are children of it. A throw is recorded on the span (status ERROR) and rethrown.
 */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, opts: SpanOptions = {}): Promise<T> {
  if (!enabled) return fn(NOOP_SPAN);
  const parent = opts.parent ?? (opts.root ? ROOT_CONTEXT : context.active());
  const span = tracer.startSpan(name, { attributes, kind: opts.kind ?? SpanKind.INTERNAL, ...(opts.links ? { links: opts.links } : {}) }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** A span started now and ended by the caller (one per message of a batch sent in one request). */
export function startSpan(name: string, attributes: Attributes, opts: SpanOptions = {}): Span {
  if (!enabled) return NOOP_SPAN;
  const parent = opts.parent ?? (opts.root ? ROOT_CONTEXT : context.active());
  return tracer.startSpan(name, { attributes, kind: opts.kind ?? SpanKind.INTERNAL, ...(opts.links ? { links: opts.links } : {}) }, parent);
}

/** Runs `fn` with `span` active (its children and log lines belong to it). */
export function withSpan<T>(span: Span, fn: () => T): T {
  if (!enabled) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Marks a span failed with the error's type and message (never its values: see logger.ts). */
export function failSpan(span: Span, err: unknown): void {
  if (!enabled) return;
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException({ name: e.name, message: e.message });
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** Adds attributes to the active span (a job's own figures, e.g. processedCount); nothing when off. */
export function spanAttributes(attributes: Attributes): void {
  if (!enabled) return;
  trace.getActiveSpan()?.setAttributes(attributes);
}

/** The active context as a W3C `traceparent`, or null (tracing off, no span). Stored with outbox rows. */
export function currentTraceparent(): string | null {
  if (!enabled) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/**
 * The trace id of a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), or null for none or one
 * that is not well formed: what the ops console links a failed row to, from the traceparent the
 * row's writer stored (or a dead letter's header).
 */
export function traceIdOf(traceparent: string | null | undefined): string | null {
  return /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '')?.[1] ?? null;
}

type HeaderValue = Buffer | string;
const headerGetter = {
  keys: (carrier: Record<string, HeaderValue | HeaderValue[] | undefined>) => Object.keys(carrier),
  get(carrier: Record<string, HeaderValue | HeaderValue[] | undefined>, key: string) {
    const v = carrier[key];
    const one = Array.isArray(v) ? v[0] : v;
    return one === undefined ? undefined : one.toString();
  },
};

/** The context a `traceparent` (and `tracestate`) in message headers continues; the root context without them. */
export function contextFromHeaders(headers: Record<string, HeaderValue | HeaderValue[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers, headerGetter);
}

/** The context of a stored `traceparent`; the active one when there is none. */
export function contextFromTraceparent(traceparent: string | null): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : context.active();
}

/** Writes `traceparent` (and `tracestate`) of `span` into message headers, replacing any there. */
export function injectSpan(span: Span, headers: Record<string, HeaderValue>): void {
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), headers);
}

/** A context whose active span is `span`, as the parent of its children started elsewhere. */
export const contextOf = (span: Span): Context => trace.setSpan(ROOT_CONTEXT, span);

/** A link to a span, for a batch span that serves several traces. */
export const linkTo = (span: Span): Link => ({ context: span.spanContext() });

/** What traceLogFields returns outside a span: one frozen object, which logger.ts never merges into. */
export const NO_TRACE_FIELDS: Readonly<Record<string, string>> = Object.freeze({});

/** pino mixin: the active span's ids on every log line written inside it (a new object each, pino merges into it). */
export function traceLogFields(): Record<string, string> {
  if (!enabled) return NO_TRACE_FIELDS;
  const span = trace.getSpan(context.active());
  if (!span) return NO_TRACE_FIELDS;
  const sc = span.spanContext();
  return isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : NO_TRACE_FIELDS;
}
