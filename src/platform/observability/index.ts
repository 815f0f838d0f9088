/** Logs, metrics and traces for modules: the logger type and masking, the registry and metric helpers, spans. */
export { createLogger, maskName, maskPhone, type Logger } from './logger.ts';
export { counter, gauge, histogram, Counter, Gauge, Histogram, Registry } from './metrics.ts';
export { dbGauge, setMetricsLogger, DB_GAUGE_TIMEOUT_MS, type DbGaugeConfig, type DbGaugeValues } from './db-gauge.ts';
export { currentTraceparent, inSpan, spanAttributes, traceIdOf, type Attributes } from './tracing.ts';
