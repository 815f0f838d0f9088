import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Db } from '../db/index.ts';
import type { JobRunner } from '../jobs/index.ts';
import type { Logger } from '../observability/index.ts';
import type { Clock } from '../time.ts';
import { ALERT_RULES } from './alert-rules.ts';
import { createAlertEvaluator } from './alerts.ts';
import { failStaleRuns } from './audit-sql.ts';
import { registerConsolePages } from './console-pages.ts';
import { registerFailureRoutes } from './failures-routes.ts';
import { beat, overviewOf } from './overview.ts';
import { registerOpsRoutes } from './routes.ts';
import type { OpsTuning } from './defaults.ts';
import type { ActorNames, BacklogMetric, FailureSource } from './types.ts';

/** The kernel's own backlogs; modules add theirs (ModuleParts.opsBacklogs). */
const KERNEL_BACKLOGS: BacklogMetric[] = [
  { metric: 'outbox_pending', title: 'Integration outbox: unpublished events', alert: 'OutboxBacklogHigh' },
  { metric: 'outbox_oldest_pending_age_seconds', title: 'Integration outbox: oldest unpublished (s)', alert: 'OutboxOldestPendingAge' },
  { metric: 'messenger_realtime_pending', title: 'Realtime outbox: pending rows', alert: 'MessengerRealtimePendingGrowing' },
  { metric: 'messenger_realtime_oldest_pending_age_seconds', title: 'Realtime outbox: oldest pending (s)', alert: 'MessengerRealtimeOldestPendingAge' },
  { metric: 'messenger_realtime_quarantined', title: 'Realtime outbox: quarantined rows', alert: 'MessengerRealtimeQuarantined' },
  { metric: 'consumer_lag', title: 'Consumer lag per topic (messages)', alert: 'ConsumerLagging' },
  { metric: 'consumer_oldest_unconsumed_age_seconds', title: 'Consumer: oldest unconsumed (s)', alert: 'ConsumerLagging' },
  { metric: 'consumer_dlq_total', title: 'Dead-lettered records since this process started (DLQ)', alert: 'ConsumerDeadLettered' },
];

export interface OpsConsoleDeps {
  db: Db;
  log: Logger;
  clock: Clock;
  registry: Registry;
  runner: JobRunner;
  readiness: () => Promise<{ name: string; status: string }[]>;
  hubConnections: () => number;
  /** This replica's name (the job runner's lease holder id style). */
  holder: string;
  tuning: OpsTuning;
  traceUrl?: string;
}

export interface OpsConsole {
  registerFailures(source: FailureSource): void;
  registerBacklogs(list: readonly BacklogMetric[]): void;
  /** Where the audit finds its actors' names (the first that knows an id names it). */
  registerActorNames(names: ActorNames): void;
  /** The API and the console's pages on `app`. */
  register(app: FastifyInstance): void;
  /** The heartbeat, the sweep of bulk runs whose process died, and the alert sampler (with the background work). */
  start(): void;
  stop(): void;
}

export function createOpsConsole(deps: OpsConsoleDeps): OpsConsole {
  const sources: FailureSource[] = [];
  const backlogs: BacklogMetric[] = [...KERNEL_BACKLOGS];
  const namers: ActorNames[] = [];
  const closing = new AbortController();
  const { tuning } = deps;
  // The backlogs are sampled with the rules' series: the overview draws their recent past.
  const alerts = createAlertEvaluator(deps.registry, ALERT_RULES, { sampleEveryMs: tuning.opsAlertSampleMs, keepMs: tuning.opsAlertKeepMs, alsoSample: () => backlogs.map((b) => b.metric) });
  const overview = overviewOf({
    ...deps,
    jobs: () => deps.runner.list(),
    alerts,
    backlogs: () => backlogs,
    floorMs: tuning.opsOverviewFloorMs,
    replicaStaleMs: tuning.opsReplicaStaleMs,
  });
  let heartbeat: NodeJS.Timeout | undefined;
  return {
    registerFailures: (source) => void sources.push(source),
    registerBacklogs: (list) => void backlogs.push(...list),
    registerActorNames: (names) => void namers.push(names),
    register(app) {
      registerOpsRoutes(app, { db: deps.db, log: deps.log, clock: deps.clock, jobs: deps.runner, overview, alerts: () => alerts.view(), actorNames: () => namers });
      registerFailureRoutes(app, {
        db: deps.db,
        log: deps.log,
        clock: deps.clock,
        sources: () => sources,
        holder: deps.holder,
        bulk: { chunk: tuning.opsBulkChunk, pauseMs: tuning.opsBulkPauseMs, beatMs: tuning.opsBulkBeatMs },
        closing: closing.signal,
        ...(deps.traceUrl ? { traceUrl: deps.traceUrl } : {}),
      });
      registerConsolePages(app);
      app.addHook('onClose', async () => closing.abort());
    },
    start() {
      alerts.start();
      const tick = () => {
        void beat(deps.db, deps.holder, deps.hubConnections()).catch((err: unknown) => deps.log.debug({ err }, 'ops heartbeat could not be written'));
        // At start-up and then with the heartbeat: a bulk run killed with its process (SIGKILL, a
        // lost node) is ended as failed, so its audit row and the console polling it do not wait forever.
        void failStaleRuns(deps.db, tuning.opsBulkStaleMs, deps.clock.now()).then(
          (ids) => ids.length > 0 && deps.log.warn({ auditIds: ids }, 'ops bulk actions whose runner stopped beating ended as failed'),
          (err: unknown) => deps.log.debug({ err }, 'ops stale bulk sweep could not run'),
        );
      };
      tick();
      heartbeat = setInterval(tick, tuning.opsHeartbeatMs);
      heartbeat.unref();
    },
    stop() {
      alerts.stop();
      clearInterval(heartbeat);
      closing.abort();
    },
  };
}
