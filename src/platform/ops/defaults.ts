import { MINUTE_MS, SECOND_MS } from '../time.ts';
import { defineDefaults } from '../types/index.ts';

/**
 * Every default of the ops console and its API, in one place (OPS_TRACE_URL has none): fixed values
 * only a developer tunes, which a test shortens through buildApp's `tuning`.
 */
export const OPS_DEFAULTS = defineDefaults({
  /** Points of a backlog's sparkline in the overview (the sampler's samples thinned to at most this many). */
  opsTrendPoints: 60,
  /** The overview is built at most once per this long, whatever the number of open consoles; the console polls no faster. */
  opsOverviewFloorMs: 2 * SECOND_MS,
  /** A bulk action changes at most this many rows per statement… */
  opsBulkChunk: 50,
  /** …and waits this long between statements: at most 200 rows/s by default. */
  opsBulkPauseMs: 250,
  /**
   * A running bulk action writes a sign of life this often besides its progress (one statement may
   * take long); any replica ends as failed a running one silent for opsBulkStaleMs (its process was
   * killed), at start-up and on every heartbeat.
   */
  opsBulkBeatMs: 5 * SECOND_MS,
  opsBulkStaleMs: 1 * MINUTE_MS,
  /** How often the alert evaluator samples this replica's metrics, and how much it keeps (the rules reach 30 minutes back). */
  opsAlertSampleMs: 15 * SECOND_MS,
  opsAlertKeepMs: 35 * MINUTE_MS,
  /** Each replica's heartbeat (hub connections) in platform.ops_replicas, and when one counts as gone. */
  opsHeartbeatMs: 10 * SECOND_MS,
  opsReplicaStaleMs: 1 * MINUTE_MS,
  /** The dead letters page reads each DLQ topic to its end and keeps its last this many records… */
  opsDlqKeepPerTopic: 1000,
  /** …and that read answers every look for this long (one throwaway consumer group per topic per read). */
  opsDlqFreshMs: 30 * SECOND_MS,
  /** Audit entries and failed rows a page shows unless `limit` says otherwise. */
  opsAuditPageDefault: 50,
  opsFailuresPageDefault: 100,
  /** How far back the alert evaluator looks for an instant vector's last sample (Prometheus's lookback delta). */
  opsAlertLookbackMs: 5 * MINUTE_MS,
});

/** The console's fixed values as buildApp takes them (a test shortens one). */
export type OpsTuning = Omit<typeof OPS_DEFAULTS, 'opsAuditPageDefault' | 'opsFailuresPageDefault' | 'opsAlertLookbackMs'>;
