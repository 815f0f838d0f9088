import { defineModule } from '../../platform/module.ts';
import { createActivityCloser, inactivityThresholdMs as thresholdOf } from './closer/activity-closer.ts';
import { createActivityRetention } from './retention/activity-retention.ts';
import { stuckRowsGauge } from './closer/closer-metrics.ts';
import { registerUserActivityRoutes } from './http/routes.ts';
import { settingsProblems } from '../../platform/types/index.ts';
import { userActivitySettings } from './settings.ts';
import { viewStatsConsumer } from './stats/view-stats.ts';
import { USER_ACTIVITY_DEFAULTS, userActivityTuningProblems, type UserActivityTuning } from './defaults.ts';

/** Integration-event contracts other contexts may read. */
export type { PropertyObjectViewEndedPayload, SessionEndedPayload } from './events.ts';
export { PROPERTY_OBJECT_VIEW_ENDED_EVENT, SESSION_ENDED_EVENT } from './events.ts';
export type { UserActivityTuning } from './defaults.ts';

/**
 * user-activity: sessions and property-object views (REST), ActivityCloserJob closing idle ones
 * with their ended-events, ActivityRetentionJob, and the view-stats consumer.
 */
export function userActivityModule(overrides: Partial<UserActivityTuning> = {}) {
  const tuning: UserActivityTuning = { rateLimitTrackingPerMinute: USER_ACTIVITY_DEFAULTS.rateLimitTrackingPerMinute, ...overrides };
  const tuningProblems = userActivityTuningProblems(tuning);
  if (tuningProblems.length > 0) throw new Error(`invalid user-activity options: ${tuningProblems.join('; ')}`);
  return defineModule(userActivitySettings, ({ settings, db, clock, registry }) => {
    // The one check at construction: `settings` passed loadConfig's bounds at start (InactivityThreshold
    // within 10..15 min, …); values built in code meet the same ones here.
    const problems = settingsProblems(userActivitySettings, settings);
    if (problems.length > 0) throw new Error(`invalid user-activity settings: ${problems.join('; ')}`);
    const closer = createActivityCloser({ db, registry, settings });
    const inactivityThresholdMs = thresholdOf(settings);
    stuckRowsGauge(registry, db, clock, inactivityThresholdMs);
    const deps = { db, clock, inactivityThresholdMs };

    return {
      name: 'user-activity',
      routes: (app) => registerUserActivityRoutes(app, deps, { trackingPerMinute: tuning.rateLimitTrackingPerMinute }),
      jobs: [closer, createActivityRetention({ db, registry, settings })],
      consumers: [viewStatsConsumer({ now: () => clock.now() })],
    };
  });
}

export default userActivityModule();
