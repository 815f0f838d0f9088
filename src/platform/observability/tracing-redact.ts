import type { Attributes, AttributeValue, Link } from '@opentelemetry/api';
import type { ReadableSpan, SpanExporter, TimedEvent } from '@opentelemetry/sdk-trace-base';
import { redactSecrets } from './redact.ts';

/**
 * The exporter every span leaves through (tracing-sdk.ts wraps the OTLP one and a test's): each
 * string in a span's name, attributes, events, links and status message goes through the same
 * redaction as the log lines. Done here, at the exit, because the URL reaches spans from several
 * places we do not write (@fastify/otel's `url.path` is the raw request URL, the HTTP
 * instrumentation's `url.query`/`url.full` redact only cloud-signature parameters, an exception
 * event quotes whatever its error said).
 */

function redactValue(value: AttributeValue | undefined): AttributeValue | undefined {
  if (typeof value === 'string') return redactSecrets(value);
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? redactSecrets(v) : v)) as AttributeValue;
  return value;
}

function redactAttributes(attributes: Attributes | undefined): Attributes | undefined {
  if (!attributes) return attributes;
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) out[key] = redactValue(value);
  return out;
}

/** A view of the ended span with redacted strings; everything else (ids, times, resource) is the span's own. */
export function redactSpan(span: ReadableSpan): ReadableSpan {
  const { status } = span;
  return Object.create(span, {
    name: { value: redactSecrets(span.name) },
    attributes: { value: redactAttributes(span.attributes) },
    events: { value: span.events.map((e): TimedEvent => ({ ...e, name: redactSecrets(e.name), attributes: redactAttributes(e.attributes) })) },
    links: { value: span.links.map((l): Link => ({ ...l, attributes: redactAttributes(l.attributes) })) },
    status: { value: status.message === undefined ? status : { ...status, message: redactSecrets(status.message) } },
  }) as ReadableSpan;
}

export function redactingExporter(inner: SpanExporter): SpanExporter {
  return {
    export: (spans, done) => inner.export(spans.map(redactSpan), done),
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}
