import { createRequire } from 'node:module';
import type { FastifyPluginCallback } from 'fastify';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from './logger.ts';
import type { TracingSettings } from './settings.ts';
import { setTracingOn } from './tracing.ts';
import { redactingExporter } from './tracing-redact.ts';

/**
 * Starts the OpenTelemetry SDK — or nothing. With OTEL_EXPORTER_OTLP_ENDPOINT unset (and no test
 * exporter) no SDK module is imported, no provider is registered and nothing is patched: the API
 * stays a no-op and the kernel's helpers (tracing.ts) skip their spans.
 *
 * How the instrumentations get in without a loader flag: they hook `require` (require-in-the-middle),
 * and after registering them we `require` the modules they patch (pg, ioredis, http, https) once.
 * Those are CommonJS, shared by `import` and `require` through one module cache, and each
 * instrumentation patches prototypes and the module object (pg Client.prototype.query, Redis
 * prototype.sendCommand, http.Server.prototype.emit), so objects created before or after, from ESM
 * or CJS, are traced. So `npm start` stays `node src/main.ts` and a test can start tracing first
 * thing. Not traced: a function taken out of a module before the start (`import { request } from
 * 'node:http'` in ESM). Fastify is traced by @fastify/otel's plugin (fastifyTracingPlugin, which
 * app.ts registers before any route), not by patching.
 *
 * Not @opentelemetry/instrumentation-kafkajs: it would start a send span per message in the
 * publisher's context and write THAT into each message's traceparent, and a consumer span tree of
 * its own; the kernel makes both (outbox/publish-tracing.ts, events/consumer-tracing.ts) so each
 * message continues the trace of the request that wrote its outbox row, in bulk sends too.
 */

export interface Tracing {
  /** Ends the SDK: pending spans are exported (bounded by the exporter's timeout). */
  shutdown(): Promise<void>;
  forceFlush(): Promise<void>;
}

let fastifyPlugin: FastifyPluginCallback | undefined;

/** @fastify/otel's plugin when tracing is on, for app.ts to register before its routes. */
export const fastifyTracingPlugin = (): FastifyPluginCallback | undefined => fastifyPlugin;

/** service.name of the spans when OTEL_SERVICE_NAME is unset. */
const SERVICE_NAME = 'pin-platform-jobs';

/** Monitoring and health probes would open a trace per scrape. */
const UNTRACED_PATHS = /^\/(metrics|health\/)/;

export interface StartTracingOptions {
  /** Tests: export here (e.g. InMemorySpanExporter) without an endpoint, each span as it ends. */
  exporter?: SpanExporter;
}

export async function startTracing(settings: TracingSettings, log: Logger, opts: StartTracingOptions = {}): Promise<Tracing | null> {
  if (!settings.OTEL_EXPORTER_OTLP_ENDPOINT && !opts.exporter) return null;
  const [{ NodeTracerProvider }, base, res, otlp, inst, http, pgI, redisI, fastifyOtel] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
    import('@fastify/otel'),
  ]);
  // Spans of a test go out as they end; the OTLP exporter batches (OTEL_BSP_* tune it). Either way
  // secret query parameters are redacted on the way out (tracing-redact.ts).
  const processor = opts.exporter
    ? new base.SimpleSpanProcessor(redactingExporter(opts.exporter))
    : new base.BatchSpanProcessor(redactingExporter(new otlp.OTLPTraceExporter()));
  // The service's own name unless the standard OTEL_SERVICE_NAME (read by the SDK's envDetector) says otherwise.
  const resource = res
    .defaultResource()
    .merge(res.resourceFromAttributes({ 'service.name': SERVICE_NAME }))
    .merge(res.detectResources({ detectors: [res.envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register(); // AsyncLocalStorage context, W3C trace-context + baggage propagation
  const fastify = new fastifyOtel.FastifyOtelInstrumentation({
    instrumentHooks: false, // a span per request and per handler, not per hook
    ignorePaths: (route: { url?: string }) => UNTRACED_PATHS.test(route.url ?? ''),
  });
  const instrumentations = inst.registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new http.HttpInstrumentation({ ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.test(req.url ?? '') }),
      // Statements outside any span (LISTEN, lock probes, pollers between runs) open no trace of their own.
      new pgI.PgInstrumentation({ requireParentSpan: true }),
      new redisI.IORedisInstrumentation({ requireParentSpan: true }),
      fastify,
    ],
  });
  const require = createRequire(import.meta.url);
  for (const name of ['pg', 'ioredis', 'node:http', 'node:https']) require(name);
  fastifyPlugin = fastify.plugin() as FastifyPluginCallback;
  setTracingOn(true);
  log.info({ endpoint: settings.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: resource.attributes['service.name'] }, 'tracing on (OpenTelemetry, OTLP/HTTP json)');
  return {
    forceFlush: () => provider.forceFlush(),
    async shutdown() {
      setTracingOn(false);
      fastifyPlugin = undefined;
      instrumentations();
      await provider.shutdown();
    },
  };
}
