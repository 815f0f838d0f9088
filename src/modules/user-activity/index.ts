import type { UserActivitySettings } from './settings.ts';
import { defineModule } from '../../platform/module.ts';
import { activityCloserJob, createActivityCloser } from './activity-closer.ts';
import { activityRetentionJob, createActivityRetention } from './activity-retention.ts';
import { stuckRowsGauge } from './closer-metrics.ts';
import { MINUTE_MS } from './rules.ts';
import { registerUserActivityRoutes } from './routes.ts';
import { viewStatsConsumer } from './view-stats.ts';

/** Integration-event contracts other contexts may read. */
export type { PropertyObjectViewEndedPayload, SessionEndedPayload } from './events.ts';
export { PROPERTY_OBJECT_VIEW_ENDED_EVENT, SESSION_ENDED_EVENT } from './events.ts';

/**
 * user-activity: sessions and property-object views (REST), ActivityCloserJob closing idle ones
 * with their ended-events, ActivityRetentionJob, and the view-stats consumer.
 */
export default defineModule<UserActivitySettings>(({ settings: config, pool, clock, registry }) => {
  const inactivityThresholdMs = config.USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES * MINUTE_MS;
  // Validates the options (fail-fast at start), beyond the TypeBox bounds loadConfig applied.
  const closer = createActivityCloser({
    pool,
    registry,
    options: {
      inactivityThresholdMs,
      pollingIntervalMs: config.USER_ACTIVITY_CLOSER_POLLING_INTERVAL_SECONDS * 1000,
      batchSize: config.USER_ACTIVITY_CLOSER_BATCH_SIZE,
      maxRunDurationMs: config.USER_ACTIVITY_CLOSER_MAX_RUN_DURATION_SECONDS * 1000,
    },
  });
  const retention = createActivityRetention({
    pool,
    registry,
    options: {
      retentionMonths: config.USER_ACTIVITY_RETENTION_MONTHS,
      batchSize: config.USER_ACTIVITY_RETENTION_BATCH_SIZE,
      intervalMs: config.USER_ACTIVITY_RETENTION_INTERVAL_MINUTES * MINUTE_MS,
      maxRunDurationMs: 5 * MINUTE_MS,
    },
  });
  stuckRowsGauge(registry, pool, clock, inactivityThresholdMs);
  const deps = { pool, clock, inactivityThresholdMs };

  return {
    name: 'user-activity',
    routes: (app) => registerUserActivityRoutes(app, deps),
    jobs: [activityCloserJob(closer), activityRetentionJob(retention)],
    consumers: [viewStatsConsumer({ now: () => clock.now() })],
  };
});
