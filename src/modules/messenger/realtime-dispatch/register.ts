import type { ClaimReads, KindRegistration } from '../../../platform/push/index.ts';
import type { MediaJoinMinter } from '../calls/media-join.ts';
import { USER_INACTIVE_CLOSE_REASON } from '../errors.ts';
import { refuseInactiveUser } from '../user-replica/replica-reads.ts';
import { MESSENGER_FRAME_SCHEMAS } from './frames.ts';
import { MESSENGER_CARRIED_KINDS, MESSENGER_PUSH_KINDS } from '../model/push-kinds.ts';
import { buildDelivery, type JoinFor, type RealtimeRefs } from './payloads.ts';
import type { MessageRef } from './ref-types.ts';
import { loadRefs } from './refs.ts';

/**
 * The messenger's kinds on the kernel's push path (platform/push, registerKinds): its chats,
 * messages, receipts, contacts, blacklist, calls and conferences, built at delivery from their
 * references — loaded once per batch (refs.ts), built per row (payloads.ts), a media invite's
 * MediaJoinModel minted per recipient — and what the claim statement reads for them beside each row:
 * a message row's message (one round trip less before the push), and a chat row's membership
 * version (record-level access at delivery and in the stream; the group concerns stay here).
 */

/**
 * What the claim reads for the messenger's rows, declared as names (push writes the SQL): each
 * message row's message (one round trip less before the push), as the MessageRef build reads it
 * (the body stays `body`); a chat row's membership version; a chat's new messages take their stream
 * slots in Seq order.
 */
export const MESSENGER_CLAIM_READS: ClaimReads = {
  beside: {
    as: 'message',
    table: 'messenger.messages',
    by: 'messageId',
    columns: {
      id: 'id',
      chatId: 'chat_id',
      seq: 'seq::float8',
      senderUserId: 'sender_user_id',
      kind: 'kind',
      body: 'body',
      fileMeta: 'file_meta',
      cardText: 'card_text',
      sentAt: 'sent_at',
      editedAt: 'edited_at',
      deletedAt: 'deleted_at',
      clientMessageId: 'client_message_id',
      mentionedUserIds: 'mentioned_user_ids',
      // The parent's preview is not a column: refs.ts reads the previews of a batch's replies in one query.
      replyToMessageId: 'reply_to_message_id',
    } satisfies Record<Exclude<keyof MessageRef, 'replyTo'> | 'replyToMessageId', string>,
  },
  groupVersion: { table: 'messenger.chats', column: 'membership_version' },
  seqOrdered: ['MessageReceived'],
};

/** The messenger's registration: its kinds with their load and build steps, join minting, claim reads and its refusal of inactive readers. */
export const messengerPushKinds = (mintJoin: MediaJoinMinter): KindRegistration<RealtimeRefs, JoinFor> => ({
  owner: 'messenger',
  // Frames written as committed, to their user's own devices (chats/notification-level.ts).
  carried: MESSENGER_CARRIED_KINDS,
  referenced: {
    kinds: MESSENGER_PUSH_KINDS,
    load: loadRefs,
    build: buildDelivery,
    mintJoin,
    disconnectReason: USER_INACTIVE_CLOSE_REASON,
    // The stream reads a chat's events in the spans its reader was a member: push's own table, which
    // chats/chat-sql.ts writes through push's writer with each membership change.
    claimReads: MESSENGER_CLAIM_READS,
  },
  // As on every messenger route: a blocked or archived user reads no stream (403 MSG_USER_INACTIVE).
  refuseReader: refuseInactiveUser,
  refuseReaderCodes: ['MSG_USER_INACTIVE'],
  // The event stream's answer is documented by these (platform/push stream-schema.ts).
  frames: MESSENGER_FRAME_SCHEMAS,
});
