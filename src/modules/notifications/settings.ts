import { Type } from '@sinclair/typebox';
import { Duration, type SettingsOf } from '../../platform/types/index.ts';
import { NOTIFICATIONS_DEFAULTS as D, type NotificationsTuning } from './defaults.ts';

const optionalUrl = (description: string, example: string) => Type.Optional(Type.String({ pattern: '^https?://', examples: [example], description }));
const optionalSecret = (description: string) => Type.Optional(Type.String({ minLength: 16, description }));

/**
 * Settings of the notifications context (spread into ConfigSchema). Per-channel delivery rules
 * (IsEnabled, ProviderKey, MaxAttempts, RetryBackoff) live in the channel_configs table and are changed
 * through `PUT /api/notifications/channels/{channel}`; these are the process-wide knobs and the
 * provider connections.
 */
export const notificationsSettings = {
  NOTIFICATIONS_CHAT_COLLAPSE_WINDOW: Duration({
    default: D.chatCollapseWindowMs,
    minimum: '0s',
    maximum: '1h',
    description:
      "A chat's message notifications to one recipient collapse within this window: one notification (in-app plus push) per chat and recipient, later messages fold into it until the window has passed since its message or it is read (0s = every message notifies; a member for whom the chat is a message request gets one either way)",
  }),

  NOTIFICATIONS_SMTP_HOST: Type.Optional(Type.String({ minLength: 1, examples: ['smtp.example.org'], description: 'SMTP server for the Email channel (provider smtp); unset = email not configured' })),
  NOTIFICATIONS_SMTP_PORT: Type.Integer({ default: D.smtpPort, minimum: 1, maximum: 65535, description: 'SMTP port' }),
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

export type { NotificationsTuning };

/** The delivery jobs' options from the fixed values (defaults.ts): the one place they are mapped. */
export function deliveryJobOptions(t: NotificationsTuning = D): { dispatcher: DeliveryJobOptions; retryWorker: DeliveryJobOptions } {
  const shared = {
    leaseMs: t.claimLeaseMs,
    // Above the adapters' own timeout (providerTimeoutMs), which should fire first.
    hardTimeoutMs: t.providerTimeoutMs * D.hardTimeoutProviderTimeouts,
    concurrency: t.sendConcurrency,
  };
  return {
    dispatcher: {
      ...shared,
      everyMs: t.dispatchPollingIntervalMs,
      batchSize: t.dispatchBatchSize,
      // The dispatcher has no run length of its own: a number of its intervals, with a floor.
      maxRunMs: Math.max(D.dispatchMaxRunFloorMs, t.dispatchPollingIntervalMs * D.dispatchMaxRunIntervals),
    },
    retryWorker: {
      ...shared,
      everyMs: t.retryPollingIntervalMs,
      batchSize: t.retryBatchSize,
      maxRunMs: D.retryMaxRunMs,
    },
  };
}

