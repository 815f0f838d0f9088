import { SECOND_MS } from '../time.ts';
import { defineDefaults } from '../types/index.ts';

/** Every default of logging, metrics and tracing, in one place (OTEL_EXPORTER_OTLP_ENDPOINT has none). */
export const OBSERVABILITY_DEFAULTS = defineDefaults({
  /** How long a scrape waits for a database-backed gauge's read before it keeps the last values. */
  dbGaugeTimeoutMs: 2 * SECOND_MS,
  /** An error's causes are logged this many levels deep. */
  logMaxCauseDepth: 5,
});
