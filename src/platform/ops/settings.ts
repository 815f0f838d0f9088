import { Type } from '@sinclair/typebox';
import type { SettingsOf } from '../types/index.ts';

/** Settings of the ops console (/ops) and its API (/api/ops), spread into the one settings schema by src/config.ts. */
export const opsSettings = {
  OPS_TRACE_URL: Type.Optional(
    Type.String({
      maxLength: 500,
      pattern: '^https?://.*\\{traceId\\}',
      description:
        "Link from a failed row to its trace in your tracing UI, with {traceId} where the id goes (e.g. https://tempo.example.com/trace/{traceId}); unset: no trace links. Rows that store no trace id get none either way",
    }),
  ),
};

export type OpsSettings = SettingsOf<typeof opsSettings>;

/** Fixed values of the console a test shortens (buildApp's `tuning`). */
export const OPS_TUNING = {
  /** The overview is built at most once per this long, whatever the number of open consoles; the console polls no faster. */
  opsOverviewFloorMs: 2000,
  /** A bulk action changes at most this many rows per statement… */
  opsBulkChunk: 50,
  /** …and waits this long between statements: at most 200 rows/s by default. */
  opsBulkPauseMs: 250,
  /**
   * A running bulk action writes a sign of life this often besides its progress (one statement may
   * take long); any replica ends as failed a running one silent for opsBulkStaleMs (its process was
   * killed), at start-up and on every heartbeat.
   */
  opsBulkBeatMs: 5_000,
  opsBulkStaleMs: 60_000,
  /** How often the alert evaluator samples this replica's metrics, and how much it keeps (the rules reach 30 minutes back). */
  opsAlertSampleMs: 15_000,
  opsAlertKeepMs: 35 * 60_000,
  /** Each replica's heartbeat (hub connections) in platform.ops_replicas, and when one counts as gone. */
  opsHeartbeatMs: 10_000,
  opsReplicaStaleMs: 60_000,
  /** The dead letters page reads each DLQ topic to its end and keeps its last this many records… */
  opsDlqKeepPerTopic: 1000,
  /** …and that read answers every look for this long (one throwaway consumer group per topic per read). */
  opsDlqFreshMs: 30_000,
};
export type OpsTuning = typeof OPS_TUNING;
