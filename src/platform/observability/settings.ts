import { Type } from '@sinclair/typebox';
import type { SettingsOf } from '../types/index.ts';

/**
 * Tracing (tracing-sdk.ts): the standard OpenTelemetry variables the service decides on. The SDK
 * reads the rest of the standard ones itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_TRACES_SAMPLER(_ARG), OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*).
 */
export const tracingSettings = {
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(
    Type.String({
      pattern: '^https?://',
      examples: ['http://127.0.0.1:4318'], description: 'OTLP/HTTP collector base URL (spans go to <url>/v1/traces); unset = tracing off, the SDK is not even loaded',
    }),
  ),
  OTEL_SERVICE_NAME: Type.String({ default: 'pin-platform-jobs', minLength: 1, description: 'service.name of the spans' }),
  // Only the JSON encoding is built in (@opentelemetry/exporter-trace-otlp-http); a collector takes it on the same port.
  OTEL_EXPORTER_OTLP_PROTOCOL: Type.Literal('http/json', { default: 'http/json', description: 'OTLP encoding; only http/json is built in' }),
};

export type TracingSettings = SettingsOf<typeof tracingSettings>;
