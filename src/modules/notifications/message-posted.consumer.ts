import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { MESSAGE_POSTED_EVENT } from '../../contracts/messenger-events.ts';
import { TOPICS } from '../../event-topics.ts';
import { defineConsumer, PoisonMessageError, type ConsumerDefinition } from '../../platform/events/index.ts';
import type { Logger } from '../../platform/observability/index.ts';
import type { Hub } from '../../platform/realtime/index.ts';
import { Uuid } from '../../platform/types/index.ts';
import { withTimeout, type Clock } from '../../platform/time.ts';
import { noticeCandidates, writeMessageNotices, type NoticeRecipient } from './chat-notices.ts';
import type { NotificationMetrics } from './metrics.ts';
import { heldBackReason } from './notifications.ts';
import type { ProviderRegistry } from './providers/registry.ts';
import { NOTIFICATIONS_DEFAULTS } from './defaults.ts';

/** MessagePostedKafkaEvent (docs/architecture.md, "Event contracts"): never carries the message body. */
export const MessagePostedKafkaEvent = Type.Object({
  ChatId: Uuid,
  MessageId: Uuid,
  Seq: Type.Integer({ minimum: 0 }),
  SenderUserId: Uuid,
  RecipientUserIds: Type.Array(Uuid, { maxItems: 10_000 }),
  /** Recipients for whom the chat is a message request; absent (an older producer): none. */
  RequestUserIds: Type.Optional(Type.Array(Uuid, { maxItems: 10_000 })),
  /** The members the message mentions; absent: none. */
  MentionedUserIds: Type.Optional(Type.Array(Uuid, { maxItems: 10_000 })),
  /** Recipients who muted the chat (level off); absent: none. */
  MutedUserIds: Type.Optional(Type.Array(Uuid, { maxItems: 10_000 })),
  /** Recipients notified only of messages that mention them (level mentions); absent: none. */
  MentionsOnlyUserIds: Type.Optional(Type.Array(Uuid, { maxItems: 10_000 })),
  Kind: Type.String({ minLength: 1, maxLength: 50 }),
  SentAt: Type.String({ minLength: 1 }),
});
export type MessagePostedKafkaEvent = Static<typeof MessagePostedKafkaEvent>;

export const MESSAGE_POSTED_INVALID = 'NTF_MESSAGE_POSTED_INVALID';

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
 * in-app notification plus a push per registered device — unless the chat's earlier notification
 * takes this message too (chat-notices.ts): one notification per chat and recipient within
 * `collapseWindowMs`, and one only while the chat is a message request to them (RequestUserIds).
 * Connected recipients already got the message in realtime from the messenger. Rows are deduped
 * per message and recipient, on top of the runner's inbox. Presence that cannot be read (the hub's
 * Redis down, or silent past NOTIFICATIONS_DEFAULTS.presenceLookupTimeoutMs) counts as offline: a redundant push beats
 * holding every later notification of the partition until Redis returns. Every partition of the
 * topic is read at once, so one chat's backlog (keyed by ChatId) never holds another chat's.
 */
export function messagePostedConsumer(deps: {
  hub: Hub;
  clock: Clock;
  providers: ProviderRegistry;
  metrics: NotificationMetrics;
  log: Logger;
  /** NOTIFICATIONS_CHAT_COLLAPSE_WINDOW. */
  collapseWindowMs: number;
}): ConsumerDefinition<MessagePostedKafkaEvent> {
  return defineConsumer<MessagePostedKafkaEvent>({
    name: 'notifications.message-posted',
    topic: TOPICS.messagePosted,
    groupId: 'pin-notifications.message-posted',
    eventTypes: [MESSAGE_POSTED_EVENT],
    partitionsConcurrently: NOTIFICATIONS_DEFAULTS.messagePostedPartitions,
    maxMessagesPerTransaction: NOTIFICATIONS_DEFAULTS.messagesPerTransaction,
    async handle(event, tx) {
      const p = event.payload;
      if (!Value.Check(MessagePostedKafkaEvent, p) || Number.isNaN(Date.parse(p.SentAt))) {
        const first = [...Value.Errors(MessagePostedKafkaEvent, p)][0];
        throw new PoisonMessageError(MESSAGE_POSTED_INVALID, `MessagePostedKafkaEvent invalid at ${first?.path || 'SentAt'}`);
      }
      const scope = { chatId: p.ChatId, sentAt: new Date(p.SentAt), windowMs: deps.collapseWindowMs };
      const recipients = messageRecipients(p);
      const candidates = await noticeCandidates(tx, scope, recipients);
      deps.metrics.folded.inc(recipients.length - candidates.length);
      const { online, failures, error: presenceError } = await lookUpPresence(deps.hub, candidates.map((c) => c.userId), NOTIFICATIONS_DEFAULTS.presenceLookupTimeoutMs);
      if (failures > 0) {
        deps.metrics.presenceUnknown.inc(failures);
        const reason = presenceError instanceof Error ? presenceError.message : String(presenceError);
        deps.log.warn({ messageId: event.messageId, chatId: p.ChatId, err: reason }, 'hub presence unreadable; recipients treated as offline');
      }
      const written = await writeMessageNotices(
        tx,
        scope,
        {
          title: 'New message',
          data: { ChatId: p.ChatId, MessageId: p.MessageId, Seq: p.Seq, SenderUserId: p.SenderUserId, Kind: p.Kind, SentAt: p.SentAt },
          correlationId: event.correlationId ?? null,
          sourcePrefix: `message-posted:${p.MessageId}`,
          now: deps.clock.now(),
        },
        candidates.filter((_, i) => !online[i]),
      );
      for (const w of written) {
        const reason = heldBackReason(w.isEnabled ?? false, w.providerKey ? deps.providers.state(w.providerKey) : 'unknown');
        if (reason) deps.metrics.skipped.inc({ channel: w.channel, reason }, w.rows);
      }
    },
  });
}

/**
 * The event's recipients but the sender, once each, lower-case, each marked when the chat is a
 * message request to them; without those who muted the chat, and without those notified only of
 * mentions whom this message does not mention (their chat's notification level).
 */
export function messageRecipients(p: MessagePostedKafkaEvent): NoticeRecipient[] {
  const sender = p.SenderUserId.toLowerCase();
  const set = (ids: readonly string[] | undefined) => new Set((ids ?? []).map((id) => id.toLowerCase()));
  const requests = set(p.RequestUserIds);
  const muted = set(p.MutedUserIds);
  const mentionsOnly = set(p.MentionsOnlyUserIds);
  const mentioned = set(p.MentionedUserIds);
  return [...new Set(p.RecipientUserIds.map((id) => id.toLowerCase()))]
    .filter((id) => id !== sender && !muted.has(id) && (!mentionsOnly.has(id) || mentioned.has(id)))
    .map((userId) => ({ userId, request: requests.has(userId) }));
}
