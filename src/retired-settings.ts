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
  | { constant: string; why: string }
  /** Folded into another setting (`replacedBy`); `how` says which of its values to set, or what it now decides. */
  | { replacedBy: string; how: string }
  /** Left to a library's own variable (`external`, read by that library, not a setting of ours); `how` says whose. */
  | { external: string; how: string };

const UNIT_MS = { ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export const RETIRED_SETTINGS: Record<string, RetiredSetting> = {
  // Prefixes say what a setting is about; durations are duration strings with unit-free names.
  SHUTDOWN_TIMEOUT_MS: { renamed: 'SHUTDOWN_TIMEOUT', unit: 'ms' },
  HTTP_REQUEST_TIMEOUT_MS: { constant: 'HTTP_DEFAULTS.httpRequestTimeoutMs = 30s in src/platform/http/defaults.ts', why: 'a whole request arrives within it' },
  HTTP_CONNECTION_TIMEOUT_MS: { constant: 'HTTP_DEFAULTS.httpConnectionTimeoutMs = 2m in src/platform/http/defaults.ts', why: 'a silent connection is closed' },
  HTTP_KEEP_ALIVE_TIMEOUT_MS: { renamed: 'HTTP_KEEP_ALIVE_TIMEOUT', unit: 'ms' },
  DB_POOL_MAX: { renamed: 'DATABASE_POOL_MAX' },
  DATABASE_CONNECT_TIMEOUT_MS: { constant: 'DB_DEFAULTS.databaseConnectTimeoutMs = 5s in src/platform/db/defaults.ts', why: 'a silent database host fails instead of hanging' },
  DATABASE_STATEMENT_TIMEOUT_MS: { renamed: 'DATABASE_STATEMENT_TIMEOUT', unit: 'ms' },
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: { constant: 'DB_DEFAULTS.databaseIdleInTransactionTimeoutMs = 1m in src/platform/db/defaults.ts', why: 'no transaction here waits on anything but the database' },
  DATABASE_STARTUP_WAIT_MS: { constant: 'DB_DEFAULTS.databaseStartupWaitMs = 30s in src/platform/db/defaults.ts', why: 'a database starting with the stack is waited for; past it the orchestrator restarts the replica' },
  CONSUMER_MAX_ATTEMPTS: { constant: 'EVENTS_DEFAULTS.kafkaConsumerMaxAttempts = 10 in src/platform/events/defaults.ts', why: "a consumer's poison threshold; a consumer may set its own" },
  KAFKA_LAG_POLL_INTERVAL_MS: { constant: 'EVENTS_DEFAULTS.kafkaLagPollingIntervalMs = 15s in src/platform/events/defaults.ts', why: 'how often consumer lag is read' },
  KAFKA_CONSUMER_SESSION_TIMEOUT_MS: { constant: 'EVENTS_DEFAULTS.kafkaConsumerSessionTimeoutMs = 30s in src/platform/events/defaults.ts', why: "kafkajs's default; a dead member's partitions move on after it" },
  REDIS_COMMAND_TIMEOUT_MS: { constant: 'REALTIME_DEFAULTS.redisCommandTimeoutMs = 2s in src/platform/realtime/defaults.ts', why: 'a hung Redis must not hang a push' },
  HUB_PING_INTERVAL_MS: { constant: 'REALTIME_DEFAULTS.hubPingIntervalMs = 15s in src/platform/realtime/defaults.ts', why: 'the SignalR default' },
  HUB_CLIENT_TIMEOUT_MS: { constant: 'REALTIME_DEFAULTS.hubClientTimeoutMs = 30s in src/platform/realtime/defaults.ts', why: "twice the SignalR clients' keep-alive" },
  HUB_ACCESS_RECHECK_INTERVAL_MS: { constant: 'REALTIME_DEFAULTS.hubAccessRecheckIntervalMs = 1m in src/platform/realtime/defaults.ts', why: 'a safety net for lost backplane messages' },
  AUTH_MAX_TOKEN_LIFETIME_SECONDS: { renamed: 'AUTH_MAX_TOKEN_LIFETIME', unit: 's' },
  AUTH_JWKS_CACHE_MAX_AGE_MS: { constant: 'HTTP_DEFAULTS.jwksCacheMaxAgeMs = 10m in src/platform/http/defaults.ts', why: 'how long fetched keys are used' },
  AUTH_JWKS_COOLDOWN_MS: { constant: 'HTTP_DEFAULTS.jwksCooldownMs = 30s in src/platform/http/defaults.ts', why: 'refetches for an unknown kid' },
  AUTH_JWKS_TIMEOUT_MS: { constant: 'HTTP_DEFAULTS.jwksTimeoutMs = 5s in src/platform/http/defaults.ts', why: 'longest JWKS fetch' },
  OUTBOX_POLL_INTERVAL_MS: { renamed: 'OUTBOX_POLLING_INTERVAL', unit: 'ms' },
  OUTBOX_MAX_RUN_MS: { constant: 'OUTBOX_DEFAULTS.outboxMaxRunMs = 5s in src/platform/outbox/defaults.ts', why: "a publisher run's limit; the next tick or wake goes on" },
  OUTBOX_IDLE_WAIT_MS: { constant: 'OUTBOX_DEFAULTS.outboxIdleWaitMs = 250ms in src/platform/outbox/defaults.ts', why: "the publisher's wait for the next commit" },
  OUTBOX_RETENTION_HOURS: { constant: 'OUTBOX_DEFAULTS.outboxRetentionMs = 1d in src/platform/outbox/defaults.ts', why: 'a day for a replay or a look after an incident' },
  INBOX_RETENTION_DAYS: { constant: 'OUTBOX_DEFAULTS.inboxRetentionMs = 7d in src/platform/outbox/defaults.ts', why: "Kafka's default retention: a redelivery the broker can still make is caught" },
  IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL_MS: { renamed: 'IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL', unit: 'ms' },
  IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION_MS: { renamed: 'IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION', unit: 'ms' },
  IDENTITY_ACCESS_FANOUT_RETRY_BASE_MS: { constant: 'IDENTITY_DEFAULTS.fanOutRetryBaseMs = 1s in src/modules/identity/defaults.ts', why: 'first retry delay of a failed page' },
  IDENTITY_ACCESS_FANOUT_RETRY_CAP_MS: { constant: 'IDENTITY_DEFAULTS.fanOutRetryCapMs = 1m in src/modules/identity/defaults.ts', why: 'longest retry delay of a failed page' },
  IDENTITY_ASSIGNMENT_EXPIRY_INTERVAL_MS: { constant: "IDENTITY_DEFAULTS.assignmentExpiryIntervalMs = 30s in src/modules/identity/defaults.ts", why: "the expiry worker's cycle" },
  USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES: { renamed: 'USER_ACTIVITY_INACTIVITY_THRESHOLD', unit: 'min' },
  USER_ACTIVITY_CLOSER_POLLING_INTERVAL_SECONDS: { renamed: 'USER_ACTIVITY_CLOSER_POLLING_INTERVAL', unit: 's' },
  USER_ACTIVITY_CLOSER_MAX_RUN_DURATION_SECONDS: { renamed: 'USER_ACTIVITY_CLOSER_MAX_RUN_DURATION', unit: 's' },
  USER_ACTIVITY_RETENTION_INTERVAL_MINUTES: { constant: 'USER_ACTIVITY_DEFAULTS.retentionIntervalMs = 1h in src/modules/user-activity/defaults.ts', why: 'hourly is plenty for a line in months' },
  USER_ACTIVITY_RETENTION_MAX_RUN_MINUTES: { constant: 'USER_ACTIVITY_DEFAULTS.retentionMaxRunMs = 5m in src/modules/user-activity/defaults.ts', why: "a retention run's limit" },
  NOTIFICATIONS_RETRY_INTERVAL_SECONDS: { constant: "NOTIFICATIONS_DEFAULTS.retryPollingIntervalMs = 1m in src/modules/notifications/defaults.ts", why: "seed 004's one-minute cycle" },
  NOTIFICATIONS_RETRY_MAX_RUN_SECONDS: { constant: 'NOTIFICATIONS_DEFAULTS.retryMaxRunMs = 50s in src/modules/notifications/defaults.ts', why: 'a retry run ends inside its one-minute cycle' },
  NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_INTERVAL_MINUTES: { constant: 'NOTIFICATIONS_DEFAULTS.cleanupIntervalMs = 10m in src/modules/notifications/defaults.ts', why: 'remembered signatures live minutes' },
  NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_MAX_RUN_SECONDS: { constant: "NOTIFICATIONS_DEFAULTS.cleanupMaxRunMs = 1m in src/modules/notifications/defaults.ts", why: "a cleanup run's limit" },
  NOTIFICATIONS_DISPATCH_INTERVAL_MS: { constant: 'NOTIFICATIONS_DEFAULTS.dispatchPollingIntervalMs = 5s in src/modules/notifications/defaults.ts', why: 'a commit wakes the dispatcher anyway' },
  NOTIFICATIONS_PROVIDER_TIMEOUT_MS: { constant: 'NOTIFICATIONS_DEFAULTS.providerTimeoutMs = 10s in src/modules/notifications/defaults.ts', why: 'a timeout is NTF_PROVIDER_TRANSIENT' },
  NOTIFICATIONS_CLAIM_LEASE_SECONDS: { constant: "NOTIFICATIONS_DEFAULTS.claimLeaseMs = 5m in src/modules/notifications/defaults.ts", why: "a crashed worker's rows come back after it" },
  NOTIFICATIONS_WEBHOOK_MAX_SKEW_SECONDS: { constant: "NOTIFICATIONS_DEFAULTS.webhookMaxSkewSeconds = 300 in src/modules/notifications/defaults.ts", why: "the providers' usual signature window" },
  MESSENGER_CONTACT_SEARCH_REQUEST_TIMEOUT_MS: { constant: 'MESSENGER_DEFAULTS.contactSearchRequestTimeoutMs = 5s in src/modules/messenger/defaults.ts', why: 'longest Elasticsearch request' },
  MESSENGER_CONTACT_SEARCH_INDEX_INTERVAL_MS: { constant: 'MESSENGER_DEFAULTS.contactSearchIndexIntervalMs = 1s in src/modules/messenger/defaults.ts', why: 'a commit wakes the indexer anyway' },
  MESSENGER_CONTACT_SEARCH_INDEX_MAX_RUN_MS: { constant: "MESSENGER_DEFAULTS.contactSearchIndexMaxRunMs = 5s in src/modules/messenger/defaults.ts", why: "an indexer run's limit" },
  MESSENGER_CONTACT_SEARCH_RETRY_MAX_MS: { constant: 'MESSENGER_DEFAULTS.contactSearchRetryCapMs = 1m in src/modules/messenger/defaults.ts', why: 'longest retry delay of a failed document' },
  MESSENGER_CONTACT_SEARCH_REBUILD_MAX_RUN_HOURS: { constant: "MESSENGER_DEFAULTS.contactSearchRebuildMaxRunMs = 6h in src/modules/messenger/defaults.ts", why: "a rebuild ends before the next night's" },
  MESSENGER_REALTIME_POLLING_INTERVAL_MS: { renamed: 'MESSENGER_REALTIME_POLLING_INTERVAL', unit: 'ms' },
  MESSENGER_REALTIME_MAX_RUN_DURATION_MS: { renamed: 'MESSENGER_REALTIME_MAX_RUN_DURATION', unit: 'ms' },
  MESSENGER_REALTIME_LOCK_TTL_MS: { replacedBy: 'MESSENGER_REALTIME_MAX_RUN_DURATION', how: 'the LockTtl follows it: the larger of 30s and twice it plus 2s (30s at the default 5s)' },
  MESSENGER_REALTIME_PUSH_TIMEOUT_MS: { constant: 'PUSH_DEFAULTS.realtimePushTimeoutMs = 5s in src/platform/push/defaults.ts', why: 'a hung push is a failed attempt' },
  MESSENGER_REALTIME_IDLE_WAIT_MS: { constant: "PUSH_DEFAULTS.dispatchIdleWaitMs = 250ms in src/platform/push/defaults.ts", why: "the dispatcher's wait for the next commit" },
  MESSENGER_REALTIME_BACKOFF_BASE_MS: { renamed: 'MESSENGER_REALTIME_BACKOFF_BASE', unit: 'ms' },
  MESSENGER_REALTIME_BACKOFF_CAP_MS: { renamed: 'MESSENGER_REALTIME_BACKOFF_CAP', unit: 'ms' },
  MESSENGER_REALTIME_RETENTION_DONE_HOURS: { renamed: 'MESSENGER_REALTIME_RETENTION_DONE', unit: 'h' },
  MESSENGER_EVENTS_RETENTION_HOURS: { constant: 'PUSH_DEFAULTS.eventsRetentionMs = 7d in src/platform/push/defaults.ts', why: 'a product rule: an older cursor answers 410 and the client resyncs' },
  MESSENGER_REALTIME_RETENTION_MAX_RUN_MINUTES: { constant: "PUSH_DEFAULTS.retentionMaxRunMs = 5m in src/platform/push/defaults.ts", why: "a retention run's limit" },
  MESSENGER_REALTIME_EDIT_WINDOW_SECONDS: { constant: 'EDIT_WINDOW_SECONDS = 60 in src/modules/messenger/messages/messages.ts', why: 'UC-MSG-003' },
  MESSENGER_REALTIME_MESSAGE_MAX_CHARS: { constant: 'MESSAGE_MAX_CHARS = 4000 in src/modules/messenger/messages/rules.ts', why: 'a product rule, not a knob' },
  MESSENGER_REALTIME_SEND_BATCH_MAX: { constant: 'MESSENGER_DEFAULTS.sendBatchMax = 64 in src/modules/messenger/defaults.ts', why: 'sends per statement' },
  MESSENGER_REALTIME_SEND_CONCURRENCY: { constant: 'MESSENGER_DEFAULTS.sendConcurrency = 2 in src/modules/messenger/defaults.ts', why: 'send statements at once per replica' },
  MESSENGER_REALTIME_GROUP_MAX_PARTICIPANTS: { constant: 'GROUP_MAX_PARTICIPANTS = 500 in src/modules/messenger/chats/chats.ts', why: 'a product limit' },
  MESSENGER_REALTIME_CALL_RING_TIMEOUT_SECONDS: { constant: 'CALL_RING_TIMEOUT_MS = 45s in src/modules/messenger/calls/calls.ts', why: 'a product rule' },
  MESSENGER_REALTIME_CALL_REAPER_INTERVAL_MS: { constant: "MESSENGER_DEFAULTS.callReaperIntervalMs = 2s in src/modules/messenger/defaults.ts", why: "the CallTimeoutReaper's cycle" },
  MESSENGER_REALTIME_CALL_REAPER_BATCH_SIZE: { constant: 'MESSENGER_DEFAULTS.callReaperBatchSize = 100 in src/modules/messenger/defaults.ts', why: 'invites per reaper transaction' },
  MESSENGER_REALTIME_CALL_REAPER_MAX_RUN_MS: { constant: "MESSENGER_DEFAULTS.callReaperMaxRunMs = 10s in src/modules/messenger/defaults.ts", why: "a reaper run's limit" },
  MESSENGER_REALTIME_MEDIA_TOKEN_SECRET: { renamed: 'MESSENGER_MEDIA_TOKEN_SECRET' },
  MESSENGER_REALTIME_MEDIA_TOKEN_TTL_SECONDS: { constant: 'MESSENGER_DEFAULTS.mediaTokenTtlSeconds = 300 in src/modules/messenger/defaults.ts', why: 'the room token only outlives the join' },
  MESSENGER_REALTIME_TURN_URLS: { renamed: 'MESSENGER_TURN_URLS' },
  MESSENGER_REALTIME_TURN_SECRET: { renamed: 'MESSENGER_TURN_SECRET' },
  MESSENGER_REALTIME_TURN_TTL_SECONDS: { constant: 'MESSENGER_DEFAULTS.turnTtlSeconds = 3600 in src/modules/messenger/defaults.ts', why: 'the TURN REST convention' },
  // Removed: fixed constants beside the code that uses them (nobody but a developer tuned them).
  IDENTITY_ASSIGNMENT_EXPIRY_BATCH_SIZE: { constant: 'IDENTITY_DEFAULTS.assignmentExpiryBatchSize = 500 in src/modules/identity/defaults.ts', why: 'users per expiry transaction' },
  NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_BATCH_SIZE: { constant: 'NOTIFICATIONS_DEFAULTS.cleanupBatchSize = 1000 in src/modules/notifications/defaults.ts', why: 'short DELETEs' },
  MESSENGER_CONTACT_SEARCH_INDEX_BATCH_SIZE: { constant: 'MESSENGER_DEFAULTS.contactSearchIndexBatchSize = 500 in src/modules/messenger/defaults.ts', why: 'documents per bulk request' },
  MESSENGER_CONTACT_SEARCH_REBUILD_BATCH_SIZE: { constant: 'MESSENGER_DEFAULTS.contactSearchRebuildBatchSize = 1000 in src/modules/messenger/defaults.ts', why: 'rows per bulk request of the rebuild' },
  MESSENGER_USER_SYNC_PARTITIONS_CONCURRENTLY: { constant: "MESSENGER_DEFAULTS.userSyncPartitionsConcurrently = 6 in src/modules/messenger/defaults.ts", why: "the topic's partition count" },
  MESSENGER_REALTIME_RETENTION_CRON: { constant: 'PUSH_DEFAULTS.retentionCron = 23 * * * * in src/platform/push/defaults.ts', why: 'hourly retention' },
  MESSENGER_REALTIME_RETENTION_BATCH_SIZE: { constant: 'PUSH_DEFAULTS.retentionBatchSize = 5000 in src/platform/push/defaults.ts', why: 'short DELETEs' },
  // Second cut: one phone region for both contexts; developer-only knobs became constants.
  IDENTITY_PHONE_DEFAULT_REGION: { renamed: 'PHONE_DEFAULT_REGION' },
  MESSENGER_PHONE_DEFAULT_REGION: { renamed: 'PHONE_DEFAULT_REGION' },
  MESSENGER_MESSAGE_MAX_CHARS: { constant: 'MESSAGE_MAX_CHARS = 4000 in src/modules/messenger/messages/rules.ts', why: 'a product rule, not a knob' },
  MESSENGER_SEND_BATCH_MAX: { constant: 'MESSENGER_DEFAULTS.sendBatchMax = 64 in src/modules/messenger/defaults.ts', why: 'sends per statement' },
  MESSENGER_SEND_CONCURRENCY: { constant: 'MESSENGER_DEFAULTS.sendConcurrency = 2 in src/modules/messenger/defaults.ts', why: 'send statements at once per replica' },
  MESSENGER_SEND_QUEUE_MAX_WAITING: { constant: 'MESSENGER_DEFAULTS.sendQueueMaxWaiting = 5000 in src/modules/messenger/defaults.ts', why: 'sends waiting per replica before 503' },
  MESSENGER_CONTACT_SEARCH_REQUEST_TIMEOUT: { constant: 'MESSENGER_DEFAULTS.contactSearchRequestTimeoutMs = 5s in src/modules/messenger/defaults.ts', why: 'longest Elasticsearch request' },
  MESSENGER_CONTACT_SEARCH_INDEX_POLLING_INTERVAL: { constant: 'MESSENGER_DEFAULTS.contactSearchIndexIntervalMs = 1s in src/modules/messenger/defaults.ts', why: 'a commit wakes the indexer anyway' },
  MESSENGER_CONTACT_SEARCH_RETRY_CAP: { constant: 'MESSENGER_DEFAULTS.contactSearchRetryCapMs = 1m in src/modules/messenger/defaults.ts', why: 'longest retry delay of a failed document' },
  MESSENGER_CONTACT_SEARCH_REBUILD_CRON: { constant: 'MESSENGER_DEFAULTS.contactSearchRebuildCron = 30 3 * * * in src/modules/messenger/defaults.ts', why: 'a nightly reconciliation' },
  HTTP_REQUEST_TIMEOUT: { constant: 'HTTP_DEFAULTS.httpRequestTimeoutMs = 30s in src/platform/http/defaults.ts', why: 'a whole request arrives within it' },
  HTTP_CONNECTION_TIMEOUT: { constant: 'HTTP_DEFAULTS.httpConnectionTimeoutMs = 2m in src/platform/http/defaults.ts', why: 'a silent connection is closed' },
  HUB_PING_INTERVAL: { constant: 'REALTIME_DEFAULTS.hubPingIntervalMs = 15s in src/platform/realtime/defaults.ts', why: 'the SignalR default' },
  REDIS_COMMAND_TIMEOUT: { constant: 'REALTIME_DEFAULTS.redisCommandTimeoutMs = 2s in src/platform/realtime/defaults.ts', why: 'a hung Redis must not hang a push' },
  MESSENGER_REALTIME_PUSH_TIMEOUT: { constant: 'PUSH_DEFAULTS.realtimePushTimeoutMs = 5s in src/platform/push/defaults.ts', why: 'a hung push is a failed attempt' },
  EMBEDDED_PG_PORT: { constant: 'a free port picked at each start in src/main.ts', why: 'local use only; the port is logged' },
  NOTIFICATIONS_MAX_REOPENS: { constant: 'NOTIFICATIONS_DEFAULTS.maxReopens = 3 in src/modules/notifications/defaults.ts', why: 'a product rule, not a knob' },
  NOTIFICATIONS_PUSH_TOKENS_MAX_PER_USER: { constant: 'NOTIFICATIONS_DEFAULTS.pushTokensMaxPerUser = 20 in src/modules/notifications/defaults.ts', why: 'a product rule, not a knob' },
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: { constant: 'DB_DEFAULTS.databaseIdleInTransactionTimeoutMs = 1m in src/platform/db/defaults.ts', why: 'no transaction here waits on anything but the database' },
  USER_ACTIVITY_RETENTION_BATCH_SIZE: { constant: 'USER_ACTIVITY_DEFAULTS.retentionBatchSize = 1000 in src/modules/user-activity/defaults.ts', why: 'short DELETEs' },
  IDENTITY_ACCESS_FANOUT_RANGE_SIZE: { constant: 'IDENTITY_DEFAULTS.fanOutRangeSize = 5000 in src/modules/identity/defaults.ts', why: 'users per sub-task of a large role' },
  // Third cut: developer-only timings of the kernel; fault tests shorten them in code (test/support/service-entry.ts).
  DATABASE_CONNECT_TIMEOUT: { constant: 'DB_DEFAULTS.databaseConnectTimeoutMs = 5s in src/platform/db/defaults.ts', why: 'a silent database host fails instead of hanging' },
  DATABASE_STARTUP_WAIT: { constant: 'DB_DEFAULTS.databaseStartupWaitMs = 30s in src/platform/db/defaults.ts', why: 'a database starting with the stack is waited for; past it the orchestrator restarts the replica' },
  KAFKA_TOPIC_PARTITIONS: { constant: 'EVENTS_DEFAULTS.kafkaTopicPartitions = 6 in src/platform/events/defaults.ts', why: "the user replica's consumer runs as many partitions at once" },
  KAFKA_LAG_POLLING_INTERVAL: { constant: 'EVENTS_DEFAULTS.kafkaLagPollingIntervalMs = 15s in src/platform/events/defaults.ts', why: 'how often consumer lag is read' },
  KAFKA_CONSUMER_SESSION_TIMEOUT: { constant: 'EVENTS_DEFAULTS.kafkaConsumerSessionTimeoutMs = 30s in src/platform/events/defaults.ts', why: "kafkajs's default; a dead member's partitions move on after it" },
  KAFKA_CONSUMER_MAX_ATTEMPTS: { constant: 'EVENTS_DEFAULTS.kafkaConsumerMaxAttempts = 10 in src/platform/events/defaults.ts', why: "a consumer's poison threshold; a consumer may set its own" },
  // Delivery timings of notifications: seed 004 names none of them as an option.
  NOTIFICATIONS_RETRY_POLLING_INTERVAL: { constant: "NOTIFICATIONS_DEFAULTS.retryPollingIntervalMs = 1m in src/modules/notifications/defaults.ts", why: "seed 004's one-minute cycle" },
  NOTIFICATIONS_RETRY_BATCH_SIZE: { constant: 'NOTIFICATIONS_DEFAULTS.retryBatchSize = 200 in src/modules/notifications/defaults.ts', why: 'due Failed notifications per batch' },
  NOTIFICATIONS_DISPATCH_POLLING_INTERVAL: { constant: 'NOTIFICATIONS_DEFAULTS.dispatchPollingIntervalMs = 5s in src/modules/notifications/defaults.ts', why: 'a commit wakes the dispatcher anyway' },
  NOTIFICATIONS_DISPATCH_BATCH_SIZE: { constant: 'NOTIFICATIONS_DEFAULTS.dispatchBatchSize = 200 in src/modules/notifications/defaults.ts', why: 'Pending notifications per batch' },
  NOTIFICATIONS_SEND_CONCURRENCY: { constant: 'NOTIFICATIONS_DEFAULTS.sendConcurrency = 32 in src/modules/notifications/defaults.ts', why: 'provider calls in flight per batch' },
  NOTIFICATIONS_CLAIM_LEASE: { constant: "NOTIFICATIONS_DEFAULTS.claimLeaseMs = 5m in src/modules/notifications/defaults.ts", why: "a crashed worker's rows come back after it" },
  NOTIFICATIONS_PROVIDER_TIMEOUT: { constant: 'NOTIFICATIONS_DEFAULTS.providerTimeoutMs = 10s in src/modules/notifications/defaults.ts', why: 'a timeout is NTF_PROVIDER_TRANSIENT' },
  // One choice of SMTP transport security instead of two flags; the Message-ID domain follows the From address.
  NOTIFICATIONS_SMTP_SECURE: { replacedBy: 'NOTIFICATIONS_SMTP_TLS', how: 'true = implicit, false = starttls' },
  NOTIFICATIONS_SMTP_ALLOW_PLAIN: { replacedBy: 'NOTIFICATIONS_SMTP_TLS', how: 'true = none, for a local server only' },
  NOTIFICATIONS_SMTP_MESSAGE_ID_DOMAIN: { replacedBy: 'NOTIFICATIONS_SMTP_FROM', how: 'the Message-ID domain is the domain of its address' },
  // Retentions nobody tuned: fixed beside the jobs that apply them.
  OUTBOX_RETENTION: { constant: 'OUTBOX_DEFAULTS.outboxRetentionMs = 1d in src/platform/outbox/defaults.ts', why: 'a day for a replay or a look after an incident' },
  INBOX_RETENTION: { constant: 'OUTBOX_DEFAULTS.inboxRetentionMs = 7d in src/platform/outbox/defaults.ts', why: "Kafka's default retention: a redelivery the broker can still make is caught" },
  MESSENGER_EVENTS_RETENTION: { constant: 'PUSH_DEFAULTS.eventsRetentionMs = 7d in src/platform/push/defaults.ts', why: 'a product rule: an older cursor answers 410 and the client resyncs' },
  // Fourth cut: what another setting already implies, and timings only a developer tunes.
  EVENT_BUS: { replacedBy: 'KAFKA_BROKERS', how: 'set = Kafka, unset = the in-process bus (on a real database only with ALLOW_INSECURE_DEFAULTS=true)' },
  MESSENGER_REALTIME_LOCK_TTL: { replacedBy: 'MESSENGER_REALTIME_MAX_RUN_DURATION', how: "the LockTtl follows it: the larger of 30s and twice it plus 2s (30s at the default 5s)" },
  MESSENGER_REALTIME_BACKOFF_FACTOR: { constant: 'PUSH_DEFAULTS.dispatchBackoffFactor = 2 in src/platform/push/defaults.ts', why: "seed 000's BackoffFactor 2.0" },
  MESSENGER_REALTIME_BACKOFF_JITTER: { constant: 'PUSH_DEFAULTS.dispatchBackoffJitter = 0.2 in src/platform/push/defaults.ts', why: 'up to +20%, so a hub outage does not retry in lockstep' },
  HUB_HANDSHAKE_TIMEOUT: { constant: 'REALTIME_DEFAULTS.hubHandshakeTimeoutMs = 15s in src/platform/realtime/defaults.ts', why: "ASP.NET Core's HubOptions.HandshakeTimeout" },
  FILES_S3_PATH_STYLE: { replacedBy: 'FILES_S3_ENDPOINT', how: 'set: the bucket is addressed by path (local stores, R2, GCS, MinIO); unset: Amazon S3 by host name' },
  FILES_DOWNLOAD_URL_TTL: { constant: 'MESSENGER_DEFAULTS.fileDownloadUrlTtlMs = 5m in src/modules/messenger/defaults.ts', why: 'a client asks again for a fresh download URL' },
  HUB_INVOCATION_BURST: { replacedBy: 'HUB_INVOCATIONS_PER_SECOND', how: 'the burst is two seconds of it (20 at the default 10)' },
  HUB_MAX_CONNECTS_PER_USER_PER_SECOND: { constant: 'REALTIME_DEFAULTS.hubUserConnectsPerSecond = 2 in src/platform/realtime/defaults.ts', why: "a user's share of the connects, with a burst of HUB_MAX_CONNECTIONS_PER_USER" },
  OUTBOX_BATCH_SIZE: { constant: 'OUTBOX_DEFAULTS.outboxBatchSize = 1000 in src/platform/outbox/defaults.ts', why: 'rows per publisher batch' },
  OUTBOX_MAX_RUN_DURATION: { constant: 'OUTBOX_DEFAULTS.outboxMaxRunMs = 5s in src/platform/outbox/defaults.ts', why: "a publisher run's limit; the next tick or wake goes on" },
  // Fifth cut (at most 90 settings): limits only a developer or a test lowers, and the object store's
  // region and credentials, which the AWS SDK reads itself.
  MESSENGER_RATE_LIMIT_CONTACT_REQUESTS_PER_MINUTE: { constant: 'MESSENGER_DEFAULTS.rateLimitContactRequestsPerMinute = 20 in src/modules/messenger/defaults.ts', why: 'contact requests per user per minute' },
  MESSENGER_RATE_LIMIT_CALL_INVITES_PER_MINUTE: { constant: 'MESSENGER_DEFAULTS.rateLimitCallInvitesPerMinute = 20 in src/modules/messenger/defaults.ts', why: 'call and conference invites per user per minute' },
  MESSENGER_RATE_LIMIT_CHAT_CHANGES_PER_MINUTE: { constant: 'MESSENGER_DEFAULTS.rateLimitChatChangesPerMinute = 30 in src/modules/messenger/defaults.ts', why: 'chat creations and participant additions per user per minute' },
  NOTIFICATIONS_RATE_LIMIT_PUSH_TOKEN_REGISTRATIONS_PER_MINUTE: { constant: 'NOTIFICATIONS_DEFAULTS.rateLimitPushTokenRegistrationsPerMinute = 10 in src/modules/notifications/defaults.ts', why: 'push-token registrations per user per minute' },
  USER_ACTIVITY_RATE_LIMIT_TRACKING_PER_MINUTE: { constant: 'USER_ACTIVITY_DEFAULTS.rateLimitTrackingPerMinute = 1200 in src/modules/user-activity/defaults.ts', why: 'tracking calls per client address per minute, room for a NAT' },
  HUB_MAX_BUFFERED_BYTES: { constant: 'REALTIME_DEFAULTS.hubMaxBufferedBytes = 1048576 in src/platform/realtime/defaults.ts', why: "a socket's send buffer cap; a slow consumer refills over REST" },
  FILES_UPLOAD_URL_TTL: { constant: 'MESSENGER_DEFAULTS.fileUploadUrlTtlMs = 15m in src/modules/messenger/defaults.ts', why: "a presigned upload URL's lifetime" },
  FILES_S3_REGION: { external: 'AWS_REGION', how: "the AWS SDK's default chain (or a shared profile); R2: auto" },
  FILES_S3_ACCESS_KEY_ID: { external: 'AWS_ACCESS_KEY_ID', how: "the AWS SDK's default chain (or a shared profile, an instance role)" },
  FILES_S3_SECRET_ACCESS_KEY: { external: 'AWS_SECRET_ACCESS_KEY', how: "the AWS SDK's default chain (or a shared profile, an instance role)" },
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
    } else if ('external' in entry) {
      problems.push(`${name}: removed — set ${entry.external} instead (${entry.how}); unset ${name}`);
    } else if ('replacedBy' in entry) {
      problems.push(`${name}: replaced by ${entry.replacedBy} (${entry.how}); unset ${name}`);
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
