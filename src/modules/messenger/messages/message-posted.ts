import { TOPICS } from '../../../event-topics.ts';
import type { NewEvent } from '../../../platform/outbox/enqueue.ts';
import type { MessageContentKind } from './rules.ts';

/**
 * MessagePostedKafkaEvent on pin.messenger.message-posted.v1 (DESIGN "Event contracts"), key ChatId:
 * the offline path to notifications. Recipient ids and the message's coordinates — never the body.
 */
export interface MessagePostedKafkaEvent {
  ChatId: string;
  MessageId: string;
  Seq: number;
  SenderUserId: string;
  /** Active participants but the sender, at the moment the message was sent. */
  RecipientUserIds: string[];
  Kind: MessageContentKind;
  SentAt: string;
}

export const MESSAGE_POSTED_EVENT = 'MessagePostedKafkaEvent';

export function messagePostedEvent(m: Omit<MessagePostedKafkaEvent, 'SentAt'> & { sentAt: Date }): NewEvent<MessagePostedKafkaEvent> {
  return {
    topic: TOPICS.messagePosted,
    key: m.ChatId,
    eventType: MESSAGE_POSTED_EVENT,
    contractVersion: 1,
    aggregateType: 'Chat',
    aggregateId: m.ChatId,
    occurredAt: m.sentAt,
    payload: {
      ChatId: m.ChatId,
      MessageId: m.MessageId,
      Seq: m.Seq,
      SenderUserId: m.SenderUserId,
      RecipientUserIds: m.RecipientUserIds,
      Kind: m.Kind,
      SentAt: m.sentAt.toISOString(),
    },
  };
}
