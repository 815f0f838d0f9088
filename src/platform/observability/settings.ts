import { Type } from '@sinclair/typebox';
import type { SettingsOf } from '../types/index.ts';

/**
 * Tracing (tracing-sdk.ts): the one OpenTelemetry variable the service decides on — whether to load
 * the SDK at all. The SDK reads every other standard one itself (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS,
 * _TIMEOUT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_TRACES_SAMPLER(_ARG), OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_BSP_*), so they are not ours to validate. Only OTLP/HTTP JSON is exported (a collector takes it
 * on the same port as protobuf).
 */
export const tracingSettings = {
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(
    Type.String({
      pattern: '^https?://',
      examples: ['http://127.0.0.1:4318'], description: 'OTLP/HTTP collector base URL (spans go to <url>/v1/traces); unset = tracing off, the SDK is not even loaded',
    }),
  ),
};

export type TracingSettings = SettingsOf<typeof tracingSettings>;
