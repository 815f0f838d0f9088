/**
 * The vocabulary of the notifications context: channels, statuses, provider keys and error codes,
 * spelled as the seed spells them (they travel in events and REST bodies).
 */
import { NOTIFICATIONS_DEFAULTS } from './defaults.ts';

export const CHANNELS = ['InApp', 'Email', 'Sms', 'Push', 'Telegram', 'Max', 'WhatsApp', 'Viber'] as const;
export type Channel = (typeof CHANNELS)[number];

export const STATUSES = ['Pending', 'Sent', 'Failed'] as const;
export type Status = (typeof STATUSES)[number];

export const BACKOFF_KINDS = ['Fixed', 'Exponential'] as const;
export type BackoffKind = (typeof BACKOFF_KINDS)[number];

/** Which provider adapters may serve a channel (ChannelConfig.ProviderKey must be one of them). */
export const PROVIDERS_OF: Record<Channel, readonly string[]> = {
  InApp: ['hub'],
  Email: ['smtp', 'http-email'],
  Sms: ['http-sms'],
  Push: ['http-push'],
  Telegram: ['telegram'],
  Max: ['max'],
  WhatsApp: ['whatsapp'],
  Viber: ['viber'],
};

export const PROVIDER_KEYS = [...new Set(Object.values(PROVIDERS_OF).flat())];

/** Stable codes stored in LastError, sent in events and counted in metrics. */
export const NTF = {
  transient: 'NTF_PROVIDER_TRANSIENT',
  rateLimited: 'NTF_PROVIDER_RATE_LIMITED',
  invalidRecipient: 'NTF_PROVIDER_INVALID_RECIPIENT',
  pushTokenInvalid: 'NTF_PUSH_TOKEN_INVALID',
  notImplemented: 'NTF_PROVIDER_NOT_IMPLEMENTED',
  /** Any other refusal of the message itself (template, blocked sender, payload): retrying cannot help. */
  rejected: 'NTF_PROVIDER_REJECTED',
  /** Our credentials were refused: an operator fixes the setting, so the notification keeps retrying. */
  authFailed: 'NTF_PROVIDER_AUTH_FAILED',
  /**
   * The provider may have accepted the message but we never learnt it (SMTP: the reply to the end of
   * DATA was lost or late). Not retried: the row waits for a webhook or an admin (delivery/intent.ts).
   */
  outcomeUnknown: 'NTF_PROVIDER_OUTCOME_UNKNOWN',
  /** The provider's webhook reported that an accepted message was not delivered. */
  deliveryFailed: 'NTF_PROVIDER_DELIVERY_FAILED',
} as const;
export type ProviderErrorCode = Exclude<(typeof NTF)[keyof typeof NTF], typeof NTF.deliveryFailed>;

/** REST error codes. */
export const API_ERRORS = {
  notFound: 'NTF_NOTIFICATION_NOT_FOUND',
  versionConflict: 'NTF_VERSION_CONFLICT',
  invalidProvider: 'NTF_CHANNEL_PROVIDER_INVALID',
  invalidBackoff: 'NTF_CHANNEL_BACKOFF_INVALID',
  missingAddress: 'NTF_RECIPIENT_ADDRESS_REQUIRED',
  unknownProvider: 'NTF_WEBHOOK_PROVIDER_UNKNOWN',
  badSignature: 'NTF_WEBHOOK_SIGNATURE_INVALID',
  /** A receipt whose signature was already applied (on any replica): nothing changes. */
  replayed: 'NTF_WEBHOOK_REPLAYED',
  /** A receipt that names neither its DeliveryCycle nor the providerMessageId of the cycle it answers. */
  cycleRequired: 'NTF_WEBHOOK_CYCLE_REQUIRED',
  invalidReference: 'NTF_WEBHOOK_REFERENCE_INVALID',
  /** The push token is registered to another user (it is never moved silently). */
  pushTokenTaken: 'NTF_PUSH_TOKEN_TAKEN',
  /** The user has NOTIFICATIONS_DEFAULTS.pushTokensMaxPerUser tokens already. */
  pushTokenLimit: 'NTF_PUSH_TOKEN_LIMIT',
  /** The reprocess call: the notification is not terminal Failed. */
  notTerminal: 'NTF_NOTIFICATION_NOT_TERMINAL',
  /** The resolve call: the notification's send outcome is known (or a send is in flight). */
  notUnconfirmed: 'NTF_NOTIFICATION_NOT_UNCONFIRMED',
  /** The bulk reprocess call named no channel, error code or time range. */
  reprocessFilterRequired: 'NTF_REPROCESS_FILTER_REQUIRED',
  reprocessRangeInvalid: 'NTF_REPROCESS_RANGE_INVALID',
  /** A field the bulk reprocess call does not know (a misspelt filter must not widen the set). */
  reprocessFilterUnknown: 'NTF_REPROCESS_FILTER_UNKNOWN',
} as const;

/** The hub event of a new in-app notification, sent to `user:{UserId}`. */
export const NOTIFICATION_CREATED_EVENT = 'notification_created';

/** The hub event of NotificationStatusChanged (every status transition and read), sent to `user:{UserId}` through the realtime outbox (status-frames.ts). */
export const NOTIFICATION_STATUS_CHANGED_EVENT = 'notification_status_changed';

/** NOTIFY channel that wakes the dispatcher; delivered when the creating transaction commits. */
export const DISPATCH_WAKE_CHANNEL = 'notifications_dispatch';

export const DISPATCHER_JOB = 'notifications-dispatcher';
export const RETRY_WORKER_JOB = 'notifications-retry-worker';
/** The module's retention: expired webhook signatures and lapsed chat notices (cleanup.job.ts). */
export const NOTIFICATIONS_CLEANUP_JOB = 'notifications-cleanup';
/** The seed's distributed lock name; the job runner's advisory lock for the retry worker is keyed by it. */
export const RETRY_WORKER_LOCK = 'notifications:retry-worker';
