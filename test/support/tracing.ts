import { after } from 'node:test';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createLogger } from '../../src/platform/observability/logger.ts';
import { startTracing } from '../../src/platform/observability/tracing-sdk.ts';

export type { ReadableSpan };

export interface TestTracing {
  /** Every span ended so far. */
  spans(): ReadableSpan[];
  /** The one span named `name` (fails when there are none or several), or the one `where` picks. */
  one(name: string, where?: (s: ReadableSpan) => boolean): ReadableSpan;
  /** Spans whose parent is `span`. */
  childrenOf(span: ReadableSpan): ReadableSpan[];
  reset(): void;
}

/**
 * The service's tracing (tracing-sdk.ts) with the SDK's in-memory exporter, each span exported as
 * it ends; shut down at file end. Start it first in a test file: one provider per process.
 */
export async function startTestTracing(): Promise<TestTracing> {
  const exporter = new InMemorySpanExporter();
  const tracing = await startTracing({}, createLogger('warn'), { exporter });
  after(() => tracing?.shutdown());
  const spans = () => exporter.getFinishedSpans();
  return {
    spans,
    one(name, where = () => true) {
      const found = spans().filter((s) => s.name === name && where(s));
      if (found.length !== 1) throw new Error(`expected one span '${name}', found ${found.length}: ${spans().map((s) => s.name).join(', ')}`);
      return found[0]!;
    },
    childrenOf: (span) => spans().filter((s) => s.parentSpanContext?.spanId === span.spanContext().spanId),
    reset: () => exporter.reset(),
  };
}
