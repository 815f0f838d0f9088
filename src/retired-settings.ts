import { formatDuration } from './platform/types/index.ts';

/**
 * Settings that were renamed or removed. Setting one fails start-up with a message naming what to do
 * instead: silently ignoring an old name would reset a value an operator tuned to its default.
 * Keep an entry for as long as a deployment might still carry the old name.
 */
export type RetiredSetting =
  /** Renamed; `unit` when the old one was a number in that unit and the new one is a duration string. */
  | { renamed: string; unit?: keyof typeof UNIT_MS }
  /** Removed: now a fixed constant beside the code that uses it (`value` as it is fixed, `why`). */
  | { constant: string; why: string };

const UNIT_MS = { ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export const RETIRED_SETTINGS: Record<string, RetiredSetting> = {
  // Prefixes say what a setting is about; durations are duration strings with unit-free names.
  SHUTDOWN_TIMEOUT_MS: { renamed: 'SHUTDOWN_TIMEOUT', unit: 'ms' },
  HTTP_REQUEST_TIMEOUT_MS: { renamed: 'HTTP_REQUEST_TIMEOUT', unit: 'ms' },
  HTTP_CONNECTION_TIMEOUT_MS: { renamed: 'HTTP_CONNECTION_TIMEOUT', unit: 'ms' },
  HTTP_KEEP_ALIVE_TIMEOUT_MS: { renamed: 'HTTP_KEEP_ALIVE_TIMEOUT', unit: 'ms' },
  DB_POOL_MAX: { renamed: 'DATABASE_POOL_MAX' },
  DATABASE_CONNECT_TIMEOUT_MS: { renamed: 'DATABASE_CONNECT_TIMEOUT', unit: 'ms' },
  DATABASE_STATEMENT_TIMEOUT_MS: { renamed: 'DATABASE_STATEMENT_TIMEOUT', unit: 'ms' },
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: { renamed: 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT', unit: 'ms' },
  DATABASE_STARTUP_WAIT_MS: { renamed: 'DATABASE_STARTUP_WAIT', unit: 'ms' },
  CONSUMER_MAX_ATTEMPTS: { renamed: 'KAFKA_CONSUMER_MAX_ATTEMPTS' },
  KAFKA_LAG_POLL_INTERVAL_MS: { renamed: 'KAFKA_LAG_POLLING_INTERVAL', unit: 'ms' },
  KAFKA_CONSUMER_SESSION_TIMEOUT_MS: { renamed: 'KAFKA_CONSUMER_SESSION_TIMEOUT', unit: 'ms' },
  REDIS_COMMAND_TIMEOUT_MS: { renamed: 'REDIS_COMMAND_TIMEOUT', unit: 'ms' },
  HUB_PING_INTERVAL_MS: { renamed: 'HUB_PING_INTERVAL', unit: 'ms' },
  HUB_CLIENT_TIMEOUT_MS: { renamed: 'HUB_CLIENT_TIMEOUT', unit: 'ms' },
  HUB_ACCESS_RECHECK_INTERVAL_MS: { renamed: 'HUB_ACCESS_RECHECK_INTERVAL', unit: 'ms' },
  AUTH_MAX_TOKEN_LIFETIME_SECONDS: { renamed: 'AUTH_MAX_TOKEN_LIFETIME', unit: 's' },
  AUTH_JWKS_CACHE_MAX_AGE_MS: { renamed: 'AUTH_JWKS_CACHE_MAX_AGE', unit: 'ms' },
  AUTH_JWKS_COOLDOWN_MS: { renamed: 'AUTH_JWKS_COOLDOWN', unit: 'ms' },
  AUTH_JWKS_TIMEOUT_MS: { renamed: 'AUTH_JWKS_TIMEOUT', unit: 'ms' },
  OUTBOX_POLL_INTERVAL_MS: { renamed: 'OUTBOX_POLLING_INTERVAL', unit: 'ms' },
  OUTBOX_MAX_RUN_MS: { renamed: 'OUTBOX_MAX_RUN_DURATION', unit: 'ms' },
  OUTBOX_IDLE_WAIT_MS: { renamed: 'OUTBOX_IDLE_WAIT', unit: 'ms' },
  OUTBOX_RETENTION_HOURS: { renamed: 'OUTBOX_RETENTION', unit: 'h' },
  INBOX_RETENTION_DAYS: { renamed: 'INBOX_RETENTION', unit: 'd' },
  IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL_MS: { renamed: 'IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL', unit: 'ms' },
  IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION_MS: { renamed: 'IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION', unit: 'ms' },
  IDENTITY_ACCESS_FANOUT_RETRY_BASE_MS: { renamed: 'IDENTITY_ACCESS_FANOUT_RETRY_BASE', unit: 'ms' },
  IDENTITY_ACCESS_FANOUT_RETRY_CAP_MS: { renamed: 'IDENTITY_ACCESS_FANOUT_RETRY_CAP', unit: 'ms' },
  IDENTITY_ASSIGNMENT_EXPIRY_INTERVAL_MS: { renamed: 'IDENTITY_ASSIGNMENT_EXPIRY_POLLING_INTERVAL', unit: 'ms' },
  USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES: { renamed: 'USER_ACTIVITY_INACTIVITY_THRESHOLD', unit: 'min' },
  USER_ACTIVITY_CLOSER_POLLING_INTERVAL_SECONDS: { renamed: 'USER_ACTIVITY_CLOSER_POLLING_INTERVAL', unit: 's' },
  USER_ACTIVITY_CLOSER_MAX_RUN_DURATION_SECONDS: { renamed: 'USER_ACTIVITY_CLOSER_MAX_RUN_DURATION', unit: 's' },
  USER_ACTIVITY_RETENTION_INTERVAL_MINUTES: { renamed: 'USER_ACTIVITY_RETENTION_POLLING_INTERVAL', unit: 'min' },
  USER_ACTIVITY_RETENTION_MAX_RUN_MINUTES: { renamed: 'USER_ACTIVITY_RETENTION_MAX_RUN_DURATION', unit: 'min' },
  NOTIFICATIONS_RETRY_INTERVAL_SECONDS: { renamed: 'NOTIFICATIONS_RETRY_POLLING_INTERVAL', unit: 's' },
  NOTIFICATIONS_RETRY_MAX_RUN_SECONDS: { renamed: 'NOTIFICATIONS_RETRY_MAX_RUN_DURATION', unit: 's' },
  NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_INTERVAL_MINUTES: { renamed: 'NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_POLLING_INTERVAL', unit: 'min' },
  NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_MAX_RUN_SECONDS: { renamed: 'NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_MAX_RUN_DURATION', unit: 's' },
  NOTIFICATIONS_DISPATCH_INTERVAL_MS: { renamed: 'NOTIFICATIONS_DISPATCH_POLLING_INTERVAL', unit: 'ms' },
  NOTIFICATIONS_PROVIDER_TIMEOUT_MS: { renamed: 'NOTIFICATIONS_PROVIDER_TIMEOUT', unit: 'ms' },
  NOTIFICATIONS_CLAIM_LEASE_SECONDS: { renamed: 'NOTIFICATIONS_CLAIM_LEASE', unit: 's' },
  NOTIFICATIONS_WEBHOOK_MAX_SKEW_SECONDS: { renamed: 'NOTIFICATIONS_WEBHOOK_MAX_SKEW', unit: 's' },
  MESSENGER_CONTACT_SEARCH_REQUEST_TIMEOUT_MS: { renamed: 'MESSENGER_CONTACT_SEARCH_REQUEST_TIMEOUT', unit: 'ms' },
  MESSENGER_CONTACT_SEARCH_INDEX_INTERVAL_MS: { renamed: 'MESSENGER_CONTACT_SEARCH_INDEX_POLLING_INTERVAL', unit: 'ms' },
  MESSENGER_CONTACT_SEARCH_INDEX_MAX_RUN_MS: { renamed: 'MESSENGER_CONTACT_SEARCH_INDEX_MAX_RUN_DURATION', unit: 'ms' },
  MESSENGER_CONTACT_SEARCH_RETRY_MAX_MS: { renamed: 'MESSENGER_CONTACT_SEARCH_RETRY_CAP', unit: 'ms' },
  MESSENGER_CONTACT_SEARCH_REBUILD_MAX_RUN_HOURS: { renamed: 'MESSENGER_CONTACT_SEARCH_REBUILD_MAX_RUN_DURATION', unit: 'h' },
  MESSENGER_REALTIME_POLLING_INTERVAL_MS: { renamed: 'MESSENGER_REALTIME_POLLING_INTERVAL', unit: 'ms' },
  MESSENGER_REALTIME_MAX_RUN_DURATION_MS: { renamed: 'MESSENGER_REALTIME_MAX_RUN_DURATION', unit: 'ms' },
  MESSENGER_REALTIME_LOCK_TTL_MS: { renamed: 'MESSENGER_REALTIME_LOCK_TTL', unit: 'ms' },
  MESSENGER_REALTIME_PUSH_TIMEOUT_MS: { renamed: 'MESSENGER_REALTIME_PUSH_TIMEOUT', unit: 'ms' },
  MESSENGER_REALTIME_IDLE_WAIT_MS: { renamed: 'MESSENGER_REALTIME_IDLE_WAIT', unit: 'ms' },
  MESSENGER_REALTIME_BACKOFF_BASE_MS: { renamed: 'MESSENGER_REALTIME_BACKOFF_BASE', unit: 'ms' },
  MESSENGER_REALTIME_BACKOFF_CAP_MS: { renamed: 'MESSENGER_REALTIME_BACKOFF_CAP', unit: 'ms' },
  MESSENGER_REALTIME_RETENTION_DONE_HOURS: { renamed: 'MESSENGER_REALTIME_RETENTION_DONE', unit: 'h' },
  MESSENGER_EVENTS_RETENTION_HOURS: { renamed: 'MESSENGER_EVENTS_RETENTION', unit: 'h' },
  MESSENGER_REALTIME_RETENTION_MAX_RUN_MINUTES: { renamed: 'MESSENGER_REALTIME_RETENTION_MAX_RUN_DURATION', unit: 'min' },
  MESSENGER_REALTIME_EDIT_WINDOW_SECONDS: { renamed: 'MESSENGER_EDIT_WINDOW', unit: 's' },
  MESSENGER_REALTIME_MESSAGE_MAX_CHARS: { renamed: 'MESSENGER_MESSAGE_MAX_CHARS' },
  MESSENGER_REALTIME_SEND_BATCH_MAX: { renamed: 'MESSENGER_SEND_BATCH_MAX' },
  MESSENGER_REALTIME_SEND_CONCURRENCY: { renamed: 'MESSENGER_SEND_CONCURRENCY' },
  MESSENGER_REALTIME_GROUP_MAX_PARTICIPANTS: { renamed: 'MESSENGER_GROUP_MAX_PARTICIPANTS' },
  MESSENGER_REALTIME_CALL_RING_TIMEOUT_SECONDS: { renamed: 'MESSENGER_CALL_RING_TIMEOUT', unit: 's' },
  MESSENGER_REALTIME_CALL_REAPER_INTERVAL_MS: { renamed: 'MESSENGER_CALL_REAPER_POLLING_INTERVAL', unit: 'ms' },
  MESSENGER_REALTIME_CALL_REAPER_BATCH_SIZE: { renamed: 'MESSENGER_CALL_REAPER_BATCH_SIZE' },
  MESSENGER_REALTIME_CALL_REAPER_MAX_RUN_MS: { renamed: 'MESSENGER_CALL_REAPER_MAX_RUN_DURATION', unit: 'ms' },
  MESSENGER_REALTIME_MEDIA_TOKEN_SECRET: { renamed: 'MESSENGER_MEDIA_TOKEN_SECRET' },
  MESSENGER_REALTIME_MEDIA_TOKEN_TTL_SECONDS: { renamed: 'MESSENGER_MEDIA_TOKEN_TTL', unit: 's' },
  MESSENGER_REALTIME_TURN_URLS: { renamed: 'MESSENGER_TURN_URLS' },
  MESSENGER_REALTIME_TURN_SECRET: { renamed: 'MESSENGER_TURN_SECRET' },
  MESSENGER_REALTIME_TURN_TTL_SECONDS: { renamed: 'MESSENGER_TURN_TTL', unit: 's' },
};

/** The problem of each retired name set in `env` (empty counts as unset, as in loadConfig). */
export function retiredSettingProblems(
  env: Record<string, string | undefined>,
  retired: Record<string, RetiredSetting> = RETIRED_SETTINGS,
): string[] {
  const problems: string[] = [];
  for (const [name, entry] of Object.entries(retired)) {
    const value = env[name]?.trim();
    if (value === undefined || value === '') continue;
    if ('constant' in entry) {
      problems.push(`${name}: removed — it is now a fixed constant (${entry.constant}; ${entry.why}); unset it`);
    } else if (entry.unit === undefined) {
      problems.push(`${name}: renamed ${entry.renamed}; set that instead and unset ${name}`);
    } else {
      const n = Number(value);
      const suggestion = /^\d+$/.test(value) && Number.isSafeInteger(n * UNIT_MS[entry.unit])
        ? `${entry.renamed}=${formatDuration(n * UNIT_MS[entry.unit])}`
        : `${entry.renamed} as a duration such as 30s, 5m or 24h`;
      problems.push(`${name}: renamed ${entry.renamed}, a duration string: set ${suggestion} and unset ${name}`);
    }
  }
  return problems;
}
