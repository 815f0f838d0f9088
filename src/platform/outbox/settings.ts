import { Duration, Int, Bool, type SettingsOf } from '../types/index.ts';

/** Background work and the integration outbox: publisher batches and runs. One TypeBox field per setting is its one source of default, bounds and unit (config.ts reads them from the environment). */
export const outboxSettings = {
  JOBS_ENABLED: Bool(true, 'Run background jobs and consumers in this process'),
  OUTBOX_POLLING_INTERVAL: Duration({ default: '1s', minimum: '50ms', description: 'Outbox publisher timer (NOTIFY also wakes it)' }),
  OUTBOX_BATCH_SIZE: Int({ default: 1000, minimum: 1, maximum: 50_000, description: 'Outbox rows sent per batch' }),
  OUTBOX_MAX_RUN_DURATION: Duration({ default: '5s', minimum: '100ms', description: 'Longest single outbox publisher run' }),

};

export type OutboxSettings = SettingsOf<typeof outboxSettings>;
