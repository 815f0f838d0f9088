import { Duration, Bool, type SettingsOf } from '../types/index.ts';
import { OUTBOX_DEFAULTS } from './defaults.ts';

/** Background work and the integration outbox's timer (its batch and run limits are fixed: defaults.ts). */
export const outboxSettings = {
  JOBS_ENABLED: Bool(true, 'Run background jobs and consumers in this process'),
  OUTBOX_POLLING_INTERVAL: Duration({ default: OUTBOX_DEFAULTS.outboxPollingIntervalMs, minimum: '50ms', description: 'Outbox publisher timer (NOTIFY also wakes it)' }),
};

export type OutboxSettings = SettingsOf<typeof outboxSettings>;
