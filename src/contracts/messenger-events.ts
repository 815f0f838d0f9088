/**
 * Integration-event contracts the messenger produces (docs/architecture.md, "Event contracts"), kept outside every
 * module so producer and consumers share them without importing each other. Payload field names are
 * PascalCase exactly as the seeds spell them; notifications reads MessagePostedKafkaEvent for its
 * offline path.
 */

export const MESSAGE_POSTED_EVENT = 'MessagePostedKafkaEvent';
export const MESSAGE_POSTED_CONTRACT_VERSION = 1;

/**
 * pin.messenger.message-posted.v1, key = ChatId, AggregateType "Chat": a message was sent. Recipient
 * ids and the message's coordinates — never the body.
 */
export interface MessagePostedKafkaEvent {
  ChatId: string;
  MessageId: string;
  Seq: number;
  SenderUserId: string;
  /**
   * Active participants but the sender, at the moment the message was sent, and but the member it is
   * withheld from (one who blocked its sender in their Direct chat: docs/security.md, "Consent").
   */
  RecipientUserIds: string[];
  /**
   * Those of RecipientUserIds for whom the chat is a message request (they have not accepted it:
   * docs/security.md, "Consent"): notifications sends them one notification of the chat until they
   * accept. Added within contract version 1 (a consumer treats its absence as none).
   */
  RequestUserIds: string[];
  /**
   * The members the message mentions (group chats). Added within contract version 1, as the two
   * below (a consumer treats an absent one as none).
   */
  MentionedUserIds?: string[];
  /** Those of RecipientUserIds whose notifications of the chat are off (muted): notifications skips them. */
  MutedUserIds?: string[];
  /** Those of RecipientUserIds notified of the chat only when mentioned: notifications skips them unless MentionedUserIds has them. */
  MentionsOnlyUserIds?: string[];
  Kind: 'Text' | 'File' | 'Card';
  /** ISO-8601 UTC. */
  SentAt: string;
}
