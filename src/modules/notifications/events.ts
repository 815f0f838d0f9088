import { TOPICS } from '../../event-topics.ts';
import type { NewEvent } from '../../platform/outbox/index.ts';
import type { Channel } from './model.ts';

/**
 * `pin.notifications.dispatched.v1`, key NotificationId, ContractVersion 1: the final outcome of one
 * delivery cycle. Intermediate failures publish nothing.
 */
export interface NotificationDispatchedEvent {
  NotificationId: string;
  Channel: Channel;
  Status: 'Sent' | 'Failed';
  DeliveryCycle: number;
  ProviderMessageId?: string;
  ErrorCode?: string;
  OccurredAt: string;
}

export const NOTIFICATION_DISPATCHED_EVENT = 'NotificationDispatchedEvent';

export interface CycleOutcome {
  notificationId: string;
  channel: Channel;
  deliveryCycle: number;
  status: 'Sent' | 'Failed';
  providerMessageId?: string | null;
  errorCode?: string | null;
  correlationId?: string | null;
}

export function dispatchedEvent(o: CycleOutcome, occurredAt: Date): NewEvent<NotificationDispatchedEvent> {
  const payload: NotificationDispatchedEvent = {
    NotificationId: o.notificationId,
    Channel: o.channel,
    Status: o.status,
    DeliveryCycle: o.deliveryCycle,
    ...(o.providerMessageId ? { ProviderMessageId: o.providerMessageId } : {}),
    ...(o.errorCode ? { ErrorCode: o.errorCode } : {}),
    OccurredAt: occurredAt.toISOString(),
  };
  return {
    topic: TOPICS.notificationDispatched,
    key: o.notificationId,
    eventType: NOTIFICATION_DISPATCHED_EVENT,
    contractVersion: 1,
    aggregateType: 'Notification',
    aggregateId: o.notificationId,
    occurredAt,
    correlationId: o.correlationId ?? null,
    payload,
  };
}
