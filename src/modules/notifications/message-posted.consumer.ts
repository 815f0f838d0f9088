import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { MESSAGE_POSTED_EVENT } from '../../contracts/messenger-events.ts';
import { TOPICS } from '../../event-topics.ts';
import { defineConsumer, PoisonMessageError, type ConsumerDefinition } from '../../platform/events/index.ts';
import type { Logger } from '../../platform/observability/index.ts';
import type { Hub } from '../../platform/realtime/index.ts';
import { Uuid } from '../../platform/types/index.ts';
import { withTimeout, type Clock } from '../../platform/time.ts';
import type { NotificationMetrics } from './metrics.ts';
import { createNotifications } from './notifications.ts';
import type { ProviderRegistry } from './providers/registry.ts';

/** MessagePostedKafkaEvent (docs/architecture.md, "Event contracts"): never carries the message body. */
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
 * Longest wait for the hub's presence answer (Redis) per message, all recipients' lookups at once.
 * The lookups run inside the consumer's transaction: a Redis that hangs (not down, just silent)
 * would otherwise keep the transaction open and the partition stalled for as long as it hangs. A
 * healthy lookup takes about a millisecond; past this it counts as unreadable (offline).
 */
export const PRESENCE_LOOKUP_TIMEOUT_MS = 500;

/** Presence of each user, false (and the error kept) for a lookup that failed or ran out of time. */
async function lookUpPresence(hub: Hub, userIds: readonly string[], timeoutMs: number): Promise<{ online: boolean[]; failures: number; error?: unknown }> {
  let failures = 0;
  let error: unknown;
  const online = await Promise.all(
    userIds.map((id) =>
      withTimeout(hub.isOnline(id), timeoutMs, 'hub presence lookup').catch((err: unknown) => {
        failures += 1;
        error = err;
        return false;
      }),
    ),
  );
  return { online, failures, error };
}

/**
 * The offline path: for each recipient not connected to the hub (presence across replicas), an
 * in-app notification plus a push per registered device. Connected recipients already got the
 * message in realtime from the messenger. Rows are deduped per message and recipient, on top of
 * the runner's inbox. Presence that cannot be read (the hub's Redis down, or silent past
 * PRESENCE_LOOKUP_TIMEOUT_MS) counts as offline: a redundant push beats holding every later
 * notification of the partition until Redis returns.
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
    eventTypes: [MESSAGE_POSTED_EVENT],
    async handle(event, tx) {
      const p = event.payload;
      if (!Value.Check(MessagePostedKafkaEvent, p) || Number.isNaN(Date.parse(p.SentAt))) {
        const first = [...Value.Errors(MessagePostedKafkaEvent, p)][0];
        throw new PoisonMessageError(MESSAGE_POSTED_INVALID, `MessagePostedKafkaEvent invalid at ${first?.path || 'SentAt'}`);
      }
      const recipients = [...new Set(p.RecipientUserIds.map((id) => id.toLowerCase()))].filter((id) => id !== p.SenderUserId.toLowerCase());
      const { online, failures, error: presenceError } = await lookUpPresence(deps.hub, recipients, PRESENCE_LOOKUP_TIMEOUT_MS);
      if (failures > 0) {
        deps.metrics.presenceUnknown.inc(failures);
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
