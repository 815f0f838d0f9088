import type { Db } from '../db/index.ts';
import type { BatchWorker } from '../jobs/index.ts';
import type { Registry } from '../observability/metrics.ts';
import type { Clock } from '../time.ts';
import { pushDispatchJob, type PushDispatchDeps } from './dispatch.job.ts';
import { createRealtimeMetrics, realtimeStateGauges } from './metrics.ts';
import type { Push } from './port.ts';
import { realtimeRetentionJob } from './retention.job.ts';
import { pushOptionsProblems, type PushTuning } from './defaults.ts';
import { dispatchSettingsOf, pushOptionsOf, type PushSettings } from './settings.ts';

export interface PushJobsDeps {
  db: Db;
  hub: PushDispatchDeps['hub'];
  registry: Registry;
  clock: Clock;
  push: Push;
  settings: PushSettings;
  tuning: PushTuning;
}

/**
 * The push part's background work over the kinds the modules registered: the RealtimeDispatchJob
 * (woken in this replica through `push.wake()`, in the others by NOTIFY) and RetentionDone with the
 * event stream's trim, with their metrics and the outbox's state gauges.
 */
export function pushJobs(deps: PushJobsDeps): BatchWorker[] {
  const { db, push, settings, tuning } = deps;
  // The one check at construction: a test's tuning is held to what loadConfig holds the settings to.
  const problems = pushOptionsProblems(pushOptionsOf(settings, tuning));
  if (problems.length > 0) throw new Error(`invalid push options: ${problems.join('; ')}`);
  const metrics = createRealtimeMetrics(deps.registry, db);
  realtimeStateGauges(deps.registry, db, deps.clock);
  return [
    pushDispatchJob({
      db,
      hub: deps.hub,
      metrics,
      kinds: push.kinds,
      settings: dispatchSettingsOf(settings, tuning),
      connectWake: (wake, payload) => push.connectWake(wake, payload),
    }),
    realtimeRetentionJob(db, {
      retentionMs: settings.MESSENGER_REALTIME_RETENTION_DONE,
      eventsRetentionMs: tuning.eventsRetentionMs,
      cron: tuning.retentionCron,
      batchSize: tuning.retentionBatchSize,
      maxRunMs: tuning.retentionMaxRunMs,
      metrics,
    }),
  ];
}
