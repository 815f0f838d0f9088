import type { NotificationsSettings, NotificationsTuning } from './settings.ts';
import type { Db } from '../../platform/db/index.ts';
import type { Logger } from '../../platform/observability/index.ts';
import type { UserFrames } from '../../platform/module.ts';
import type { Clock } from '../../platform/time.ts';
import type { NotificationMetrics } from './metrics.ts';
import type { ProviderRegistry } from './providers/registry.ts';

/** What the REST and webhook routes share. */
export interface NotificationsContext {
  config: NotificationsSettings;
  tuning: NotificationsTuning;
  db: Db;
  clock: Clock;
  log: Logger;
  metrics: NotificationMetrics;
  providers: ProviderRegistry;
  /** NotificationStatusChanged frames go through the realtime outbox (status-frames.ts). */
  userFrames: UserFrames;
}
