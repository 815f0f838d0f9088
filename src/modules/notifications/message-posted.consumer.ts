import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { TOPICS } from '../../event-topics.ts';
import { defineConsumer, type ConsumerDefinition } from '../../platform/events/bus.ts';
import { PoisonMessageError } from '../../platform/events/errors.ts';
import type { Logger } from '../../platform/observability/logger.ts';
import type { Hub } from '../../platform/realtime/index.ts';
import type { Clock } from '../../platform/time.ts';
import type { NotificationMetrics } from './metrics.ts';
import { createNotifications } from './notifications.ts';
import type { ProviderRegistry } from './providers/registry.ts';

const Uuid = Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' });

/** MessagePostedKafkaEvent (DESIGN "Event contracts"): never carries the message body. */
export const MessagePostedKafkaEvent = Type.Object({
  ChatId: Uuid,
  MessageId: Uuid,
  Seq: Type.Integer({ minimum: 0 }),
  SenderUserId: Uuid,
  RecipientUserIds: Type.Array(Uuid, { maxItems: 10_000 }),
  Kind: Type.String({ minLength: 1, maxLength: 50 }),
  SentAt: Type.String({ minLength: 1 }),
});
export type MessagePostedKafkaEvent = Static<typeof MessagePostedKafkaEvent>;

export const MESSAGE_POSTED_INVALID = 'NTF_MESSAGE_POSTED_INVALID';

/**
 * The offline path: for each recipient not connected to the hub (presence across replicas), an
 * in-app notification plus a push per registered device. Connected recipients already got the
 * message in realtime from the messenger. Rows are deduped per message and recipient, on top of
 * the runner's inbox. Presence that cannot be read (the hub's Redis down) counts as offline: a
 * redundant push beats holding every later notification of the partition until Redis returns.
 */
export function messagePostedConsumer(deps: {
  hub: Hub;
  clock: Clock;
  providers: ProviderRegistry;
  metrics: NotificationMetrics;
  log: Logger;
}): ConsumerDefinition<MessagePostedKafkaEvent> {
  return defineConsumer<MessagePostedKafkaEvent>({
    name: 'notifications.message-posted',
    topic: TOPICS.messagePosted,
    groupId: 'pin-notifications.message-posted',
    eventTypes: ['MessagePostedKafkaEvent'],
    async handle(event, tx) {
      const p = event.payload;
      if (!Value.Check(MessagePostedKafkaEvent, p) || Number.isNaN(Date.parse(p.SentAt))) {
        const first = [...Value.Errors(MessagePostedKafkaEvent, p)][0];
        throw new PoisonMessageError(MESSAGE_POSTED_INVALID, `MessagePostedKafkaEvent invalid at ${first?.path || 'SentAt'}`);
      }
      const recipients = [...new Set(p.RecipientUserIds.map((id) => id.toLowerCase()))].filter((id) => id !== p.SenderUserId.toLowerCase());
      let presenceError: unknown;
      const online = await Promise.all(
        recipients.map((id) =>
          deps.hub.isOnline(id).catch((err: unknown) => {
            presenceError = err;
            deps.metrics.presenceUnknown.inc();
            return false;
          }),
        ),
      );
      if (presenceError !== undefined) {
        const reason = presenceError instanceof Error ? presenceError.message : String(presenceError);
        deps.log.warn({ messageId: event.messageId, chatId: p.ChatId, err: reason }, 'hub presence unreadable; recipients treated as offline');
      }
      const now = deps.clock.now();
      for (const [i, userId] of recipients.entries()) {
        if (online[i]) continue;
        const created = await createNotifications(
          tx,
          {
            recipientUserId: userId,
            title: 'New message',
            data: { ChatId: p.ChatId, MessageId: p.MessageId, Seq: p.Seq, SenderUserId: p.SenderUserId, Kind: p.Kind, SentAt: p.SentAt },
            channels: ['Push'],
            correlationId: event.correlationId ?? null,
            sourceKey: `message-posted:${p.MessageId}:${userId}`,
          },
          now,
          deps.providers,
        );
        for (const h of created.heldBack) deps.metrics.skipped.inc(h);
      }
    },
  });
}
