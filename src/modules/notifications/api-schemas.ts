import { Type, type Static } from '@sinclair/typebox';
import { BoundedInt, Nullable, PG_INT_MAX, Text, Timestamp, Uuid } from '../../platform/types/index.ts';
import { BACKOFF_KINDS, CHANNELS, PROVIDER_KEYS, STATUSES } from './model.ts';
import { isOutcomeUnknown } from './delivery/intent.ts';
import type { NotificationRow } from './schema.ts';
import { named } from '../../platform/http/index.ts';

/** REST schemas of the notifications routes (camelCase bodies), reused by routes and tests. */

const literals = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));

export const ChannelName = literals(CHANNELS);
export const ExternalChannel = literals(CHANNELS.filter((c) => c !== 'InApp'));

/** Longest `data` accepted, as JSON text (checked with jsonValueProblem, which also refuses U+0000). */
export const NOTIFICATION_DATA_MAX_BYTES = 16_384;

export const CreateNotificationBody = Type.Object(
  {
    recipientUserId: Uuid,
    title: Text({ minLength: 1, maxLength: 200 }),
    body: Type.Optional(Text({ maxLength: 10_000 })),
    data: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100, description: `Free-form (≤ ${NOTIFICATION_DATA_MAX_BYTES} bytes as JSON)` })),
    channels: Type.Optional(Type.Array(ExternalChannel, { maxItems: 8, uniqueItems: true })),
    email: Type.Optional(Text({ minLength: 3, maxLength: 320, pattern: '^[^@\\s]+@[^@\\s]+$' })),
    phone: Type.Optional(Text({ pattern: '^\\+[1-9]\\d{6,14}$', maxLength: 16, description: 'E.164' })),
  },
  { additionalProperties: false },
);
export type CreateNotificationBody = Static<typeof CreateNotificationBody>;

export const NotificationView = named('NotificationView', Type.Object({
  id: Uuid,
  recipientUserId: Uuid,
  channel: ChannelName,
  title: Type.String(),
  body: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown()),
  status: literals(STATUSES),
  terminal: Type.Boolean(),
  attempts: Type.Integer(),
  deliveryCycle: Type.Integer(),
  nextAttemptAt: Nullable(Timestamp),
  lastError: Nullable(Type.String()),
  providerMessageId: Nullable(Type.String()),
  deliveredAt: Nullable(Timestamp),
  readAt: Nullable(Timestamp),
  sentAt: Nullable(Timestamp),
  createdAt: Timestamp,
  version: Type.Integer(),
  /**
   * The provider may have accepted the current send without our knowing (email over SMTP): never
   * resent; a delivery webhook or an admin (POST /api/notifications/unconfirmed/{id}/resolve) settles it.
   */
  outcomeUnknown: Type.Boolean(),
}));
export type NotificationView = Static<typeof NotificationView>;

const iso = (d: Date | null) => d?.toISOString() ?? null;

/** The recipient address (email, phone, token) is never echoed back. */
export function notificationView(r: NotificationRow, now: Date): NotificationView {
  return {
    id: r.id,
    recipientUserId: r.recipientUserId,
    channel: r.channel as NotificationView['channel'],
    title: r.title,
    body: r.body,
    data: r.data as Record<string, unknown>,
    status: r.status as NotificationView['status'],
    terminal: r.terminal,
    attempts: r.attempts,
    deliveryCycle: r.deliveryCycle,
    nextAttemptAt: iso(r.nextAttemptAt),
    lastError: r.lastError,
    providerMessageId: r.providerMessageId,
    deliveredAt: iso(r.deliveredAt),
    readAt: iso(r.readAt),
    sentAt: iso(r.sentAt),
    createdAt: r.createdAt.toISOString(),
    version: r.version,
    outcomeUnknown: isOutcomeUnknown(r, now),
  };
}

export const CreatedReply = Type.Object({
  notifications: Type.Array(NotificationView),
  heldBack: Type.Array(Type.Object({ channel: ChannelName, reason: Type.String() })),
});

export const FeedQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
    before: Type.Optional(Uuid),
    unreadOnly: Type.Boolean({ default: false }),
  },
  { additionalProperties: false },
);
export type FeedQuery = Static<typeof FeedQuery>;

export const FeedReply = Type.Object({ items: Type.Array(NotificationView), nextBefore: Nullable(Uuid) });

export const IdParams = Type.Object({ id: Uuid });
export const MarkReadBody = Type.Object({ version: BoundedInt({ minimum: 1, maximum: PG_INT_MAX }) }, { additionalProperties: false });

export const RetryBackoff = Type.Union([
  Type.Object({ kind: Type.Literal('Fixed'), delaySeconds: Type.Integer({ minimum: 1, maximum: 86_400 }) }, { additionalProperties: false }),
  Type.Object(
    {
      kind: Type.Literal('Exponential'),
      initialDelaySeconds: Type.Integer({ minimum: 1, maximum: 86_400 }),
      maxDelaySeconds: Type.Integer({ minimum: 1, maximum: 7 * 86_400 }),
      multiplier: Type.Optional(Type.Number({ minimum: 1, maximum: 10 })),
    },
    { additionalProperties: false },
  ),
]);
export const BackoffKind = literals(BACKOFF_KINDS);

export const ChannelConfigBody = Type.Object(
  {
    isEnabled: Type.Boolean(),
    providerKey: literals(PROVIDER_KEYS),
    maxAttempts: Type.Integer({ minimum: 1, maximum: 100 }),
    retryBackoff: RetryBackoff,
  },
  { additionalProperties: false },
);
export type ChannelConfigBody = Static<typeof ChannelConfigBody>;

export const ChannelConfigReply = Type.Object({
  channel: ChannelName,
  isEnabled: Type.Boolean(),
  providerKey: Type.String(),
  /** available | not_implemented | not_configured: whether this replica can send through it. */
  providerState: Type.String(),
  maxAttempts: Type.Integer(),
  retryBackoff: RetryBackoff,
  version: Type.Integer(),
  updatedAt: Timestamp,
});

export const ChannelParams = Type.Object({ channel: ChannelName });

export const WebhookParams = Type.Object({ providerKey: Text({ minLength: 1, maxLength: 50 }) });
/**
 * Open on purpose (the one body that is): a provider's receipt carries fields of its own (timestamps,
 * carrier details, versions added without notice), and refusing one would lose a signed receipt. The
 * fields read are the listed ones; the rest are signed, checked by nothing and stored nowhere.
 */
export const WebhookBody = Type.Object(
  {
    /** Our client reference: the NotificationId, or `NotificationId:DeliveryCycle` (the Idempotency-Key). */
    clientReference: Text({ minLength: 36, maxLength: 50 }),
    deliveryCycle: Type.Optional(BoundedInt({ minimum: 1, maximum: PG_INT_MAX })),
    status: Type.Union([Type.Literal('delivered'), Type.Literal('failed')]),
    providerMessageId: Type.Optional(Text({ maxLength: 255 })),
    errorCode: Type.Optional(Text({ maxLength: 100 })),
  },
  { additionalProperties: true, description: "A provider's delivery receipt: fields beyond these are accepted and ignored (providers add their own)" },
);
export type WebhookBody = Static<typeof WebhookBody>;
export const WebhookReply = Type.Object({ result: Type.String() });

export const PushTokenBody = Type.Object(
  {
    token: Text({ minLength: 8, maxLength: 4096 }),
    platform: Type.Union([Type.Literal('android'), Type.Literal('ios'), Type.Literal('web')]),
  },
  { additionalProperties: false },
);
export const PushTokenDeleteBody = Type.Object({ token: Text({ minLength: 8, maxLength: 4096 }) }, { additionalProperties: false });
