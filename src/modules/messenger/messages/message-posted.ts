import { MESSAGE_POSTED_CONTRACT_VERSION, MESSAGE_POSTED_EVENT } from '../../../contracts/messenger-events.ts';
import { TOPICS } from '../../../event-topics.ts';
import { outboxInsertSelect, sqlLiteral } from '../../../platform/outbox/index.ts';

/**
 * The one place MessagePostedKafkaEvent (src/contracts/messenger-events.ts) is built: the
 * platform.outbox INSERT of one event per row of `from`, as SQL text for the send statements (one
 * send, or a batch of them). Those compute Seq and the recipients inside the statement that writes
 * the message, so the event is built there too, and message, push intent and event commit in ONE
 * statement — the platform's enqueue(tx, events) takes finished payloads, which would cost a second
 * statement and an explicit transaction per send; the kernel's outboxInsertSelect owns the columns.
 *
 * `from` is a FROM clause whose rows expose `m`, the inserted message (id, "chatId", seq,
 * "senderUserId", kind, "mentionedUserIds"), and `e`: event_id (uuid), recipient_user_ids (jsonb array: the Active
 * participants but the sender), request_user_ids (jsonb array: those of them who have not accepted the
 * chat, a message request to them), muted_user_ids and mentions_only_user_ids (jsonb arrays: those of
 * them whose notification level of the chat is off, or mentions), sent_at (text, ISO-8601 UTC) and traceparent (varchar: the sending
 * request's span, null with tracing off, continued by the publisher's send). The caller's statement also
 * selects pg_notify(OUTBOX_CHANNEL, '') when it wrote a message, to wake the publisher at commit.
 */
export function messagePostedOutboxInsert(from: string): string {
  return outboxInsertSelect(
    {
      id: 'e.event_id',
      topic: sqlLiteral(TOPICS.messagePosted),
      key: 'm."chatId"',
      eventType: sqlLiteral(MESSAGE_POSTED_EVENT),
      contractVersion: String(MESSAGE_POSTED_CONTRACT_VERSION),
      aggregateType: `'Chat'`,
      aggregateId: 'm."chatId"',
      occurredAt: 'e.sent_at::timestamptz',
      correlationId: 'null',
      traceparent: 'e.traceparent',
      payload: `jsonb_build_object('ChatId', m."chatId", 'MessageId', m.id, 'Seq', m.seq, 'SenderUserId', m."senderUserId",
             'RecipientUserIds', e.recipient_user_ids,
             'RequestUserIds', e.request_user_ids, 'Kind', m.kind, 'SentAt', e.sent_at,
             'MentionedUserIds', to_jsonb(m."mentionedUserIds"), 'MutedUserIds', e.muted_user_ids,
             'MentionsOnlyUserIds', e.mentions_only_user_ids)`,
    },
    from,
  );
}
