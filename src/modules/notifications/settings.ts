import { Type } from '@sinclair/typebox';
import { Duration, type SettingsOf } from '../../platform/types/index.ts';

const optionalUrl = (description: string, example: string) => Type.Optional(Type.String({ pattern: '^https?://', examples: [example], description }));
const optionalSecret = (description: string) => Type.Optional(Type.String({ minLength: 16, description }));

/**
 * Settings of the notifications context (spread into ConfigSchema). Per-channel delivery rules
 * (IsEnabled, ProviderKey, MaxAttempts, RetryBackoff) live in the channel_configs table and are changed
 * through `PUT /api/notifications/channels/{channel}`; these are the process-wide knobs and the
 * provider connections.
 */
export const notificationsSettings = {
  NOTIFICATIONS_RATE_LIMIT_PUSH_TOKEN_REGISTRATIONS_PER_MINUTE: Type.Integer({
    default: 10,
    minimum: 0,
    maximum: 100000,
    description: 'Push-token registrations per user per minute (429 RATE_LIMITED past it; 0 = no limit)',
  }),

  NOTIFICATIONS_CHAT_COLLAPSE_WINDOW: Duration({
    default: '60s',
    minimum: '0s',
    maximum: '1h',
    description:
      "A chat's message notifications to one recipient collapse within this window: one notification (in-app plus push) per chat and recipient, later messages fold into it until the window has passed since its message or it is read (0s = every message notifies; a member for whom the chat is a message request gets one either way)",
  }),

  NOTIFICATIONS_SMTP_HOST: Type.Optional(Type.String({ minLength: 1, examples: ['smtp.example.org'], description: 'SMTP server for the Email channel (provider smtp); unset = email not configured' })),
  NOTIFICATIONS_SMTP_PORT: Type.Integer({ default: 587, minimum: 1, maximum: 65535, description: 'SMTP port' }),
  NOTIFICATIONS_SMTP_TLS: Type.Union([Type.Literal('implicit'), Type.Literal('starttls'), Type.Literal('none')], {
    default: 'starttls',
    description:
      'How the SMTP session is protected: implicit (TLS from the first byte, port 465 style); starttls (the session must upgrade: a server that offers no STARTTLS gets nothing and the email is retried); none (credentials and mail in clear: a local development server only, refused at start on a real database unless ALLOW_INSECURE_DEFAULTS)',
  }),
  NOTIFICATIONS_SMTP_USER: Type.Optional(Type.String({ minLength: 1, description: 'SMTP auth user' })),
  NOTIFICATIONS_SMTP_PASSWORD: Type.Optional(Type.String({ minLength: 1, description: 'SMTP auth password' })),
  NOTIFICATIONS_SMTP_FROM: Type.String({
    default: 'PIN <no-reply@notifications.pin.local>',
    // An address ending in @domain (bare or in angle brackets): its domain is the Message-ID's.
    pattern: '@[^@\\s<>]+>?\\s*$',
    description: 'From address of notification emails (providers smtp and http-email); its domain is the right-hand side of Message-ID <NotificationId.DeliveryCycle@domain>',
  }),
  NOTIFICATIONS_SMTP_WEBHOOK_SECRET: optionalSecret('HMAC key of delivery webhooks for provider smtp (unset = its webhook answers 401)'),

  NOTIFICATIONS_EMAIL_HTTP_URL: optionalUrl('Base URL of an HTTP email API (provider http-email, dedupes by Idempotency-Key); POST {url}/emails', 'https://mail-api.example.org/v1'),
  NOTIFICATIONS_EMAIL_HTTP_SECRET: optionalSecret('Bearer credential for the HTTP email API'),
  NOTIFICATIONS_EMAIL_HTTP_WEBHOOK_SECRET: optionalSecret('HMAC key of delivery webhooks for provider http-email'),

  NOTIFICATIONS_SMS_HTTP_URL: optionalUrl('Base URL of the SMS gateway (provider http-sms); POST {url}/messages', 'https://sms-gateway.example.org/v1'),
  NOTIFICATIONS_SMS_HTTP_SECRET: optionalSecret('Bearer credential for the SMS gateway'),
  NOTIFICATIONS_SMS_HTTP_WEBHOOK_SECRET: optionalSecret('HMAC key of delivery webhooks for provider http-sms'),

  NOTIFICATIONS_PUSH_HTTP_URL: optionalUrl('Base URL of the push service (provider http-push, FCM style); POST {url}/send', 'https://push.example.org/v1'),
  NOTIFICATIONS_PUSH_HTTP_SECRET: optionalSecret('Bearer credential for the push service'),
  NOTIFICATIONS_PUSH_HTTP_WEBHOOK_SECRET: optionalSecret('HMAC key of delivery webhooks for provider http-push'),
};

/** The domain of a From address ('PIN <no-reply@example.org>' → 'example.org'), which its Message-IDs carry. */
export function fromDomain(from: string): string {
  return /@([^@\s<>]+)>?\s*$/.exec(from)![1]!;
}

/**
 * A retry run stops claiming after 50 s, inside the seed's one-minute cycle, so one run never
 * overlaps the next tick (once NOTIFICATIONS_RETRY_MAX_RUN_SECONDS).
 */
const RETRY_MAX_RUN_MS = 50_000;

/**
 * Product rules and delivery timings of notifications that are not knobs (once settings: seed 004
 * names no option for them, and the per-channel MaxAttempts and RetryBackoff live in channel_configs).
 * The service always runs these; a test picks a small one by building the module in code,
 * `notificationsModule({ … })`, or through test/support/service-entry.ts for a child process.
 */
export const NOTIFICATIONS_TUNING = {
  /** NotificationRetryWorker cycle (seed 004: every minute), under the lock notifications:retry-worker. */
  retryPollingIntervalMs: 60_000,
  /** Due Failed notifications claimed per retry batch; a run repeats while batches come back full. */
  retryBatchSize: 200,
  /** Dispatcher timer for Pending notifications (a NOTIFY at commit wakes it at once). */
  dispatchPollingIntervalMs: 5000,
  /** Pending notifications claimed per dispatcher batch. */
  dispatchBatchSize: 200,
  /** Provider calls in flight at once within one batch. */
  sendConcurrency: 32,
  /** A claimed notification is skipped by other workers this long; a crashed worker's rows come back after it. */
  claimLeaseMs: 300_000,
  /** Longest wait for one provider call; a timeout is NTF_PROVIDER_TRANSIENT. */
  providerTimeoutMs: 10_000,
  /** Devices (push tokens) one user may register; one more is refused 409 NTF_PUSH_TOKEN_LIMIT until one is removed. */
  pushTokensMaxPerUser: 20,
  /** Times a failed-delivery webhook may reopen a Sent notification (each reopen is a new DeliveryCycle); then it is terminal Failed. */
  maxReopens: 3,
};

export type NotificationsTuning = typeof NOTIFICATIONS_TUNING;

/** The notifications settings as loadConfig read them. */
export type NotificationsSettings = SettingsOf<typeof notificationsSettings>;

/** What the dispatcher and the retry worker are built with. */
export interface DeliveryJobOptions {
  /** The job's timer. */
  everyMs: number;
  /** Rows claimed per batch. */
  batchSize: number;
  /** A run starts no new batch after this long. */
  maxRunMs: number;
  /** Provider calls in flight at once within a batch. */
  concurrency: number;
  /** A claimed row is skipped by other workers this long; a crashed worker's rows come back after it. */
  leaseMs: number;
  /** Safety net above the adapters' own timeouts, so a hung adapter never holds a batch forever. */
  hardTimeoutMs: number;
}

/** The delivery jobs' options from the fixed values: the one place they are mapped. */
export function deliveryJobOptions(t: NotificationsTuning = NOTIFICATIONS_TUNING): { dispatcher: DeliveryJobOptions; retryWorker: DeliveryJobOptions } {
  const shared = {
    leaseMs: t.claimLeaseMs,
    // Above the adapters' own timeout (providerTimeoutMs), which should fire first.
    hardTimeoutMs: t.providerTimeoutMs * 3,
    concurrency: t.sendConcurrency,
  };
  return {
    dispatcher: {
      ...shared,
      everyMs: t.dispatchPollingIntervalMs,
      batchSize: t.dispatchBatchSize,
      // The dispatcher has no run length of its own: ten of its intervals, at least a second.
      maxRunMs: Math.max(1000, t.dispatchPollingIntervalMs * 10),
    },
    retryWorker: {
      ...shared,
      everyMs: t.retryPollingIntervalMs,
      batchSize: t.retryBatchSize,
      maxRunMs: RETRY_MAX_RUN_MS,
    },
  };
}

