import type { Channel, ProviderErrorCode } from '../model.ts';

/** One send of one notification in one delivery cycle, as an adapter needs it. */
export interface Delivery {
  notificationId: string;
  deliveryCycle: number;
  /** `NotificationId:DeliveryCycle`: providers dedupe on it, so a resend after a crash is swallowed. */
  idempotencyKey: string;
  channel: Channel;
  recipientUserId: string;
  /** Email address, phone number or push token; null for in-app. */
  recipientAddress: string | null;
  title: string;
  body: string;
  data: Record<string, unknown>;
  createdAt: Date;
  /** The notification's version when claimed; recording this send's outcome makes it version + 1. */
  version: number;
}

/** What a provider adapter answers for one send. */
export type SendResult =
  | { ok: true; providerMessageId: string }
  | { ok: false; code: ProviderErrorCode; retryAfterMs?: number };

/**
 * The provider port. An adapter never throws for a provider's answer: it classifies it into a
 * SendResult (retriable vs non-retriable codes). A throw is treated as NTF_PROVIDER_TRANSIENT.
 */
export interface NotificationProvider {
  readonly key: string;
  /** False for the declared-only adapters (telegram, max, whatsapp, viber). */
  readonly implemented: boolean;
  /** False when its settings are missing (e.g. no SMTP host); its notifications wait, as a disabled channel's do (A3). */
  readonly configured: boolean;
  send(delivery: Delivery, signal: AbortSignal): Promise<SendResult>;
  /**
   * Only for a provider that cannot dedupe a resend (SMTP): the id of the message `send` is about to
   * hand over (the Message-ID). The workers record it as the row's send intent before the call, so a
   * send whose outcome was lost is not repeated blindly (delivery/intent.ts).
   */
  intentMessageId?(delivery: Delivery): string;
  close?(): Promise<void>;
}

export type ProviderState = 'available' | 'not_implemented' | 'not_configured' | 'unknown';
