import { sql } from 'drizzle-orm';
import type { ClaimedRow, ClaimReads, KindRegistration } from '../../../platform/push/index.ts';
import type { MediaJoinMinter } from '../calls/media-join.ts';
import { USER_INACTIVE_CLOSE_REASON } from '../errors.ts';
import { refuseInactiveUser } from '../user-replica/replica-reads.ts';
import { MESSENGER_FRAME_SCHEMAS } from './frames.ts';
import { MESSENGER_PUSH_KINDS } from '../model/push-kinds.ts';
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

const MESSAGE_OF_ROW = `m.id as "mId", m.chat_id as "mChatId", m.seq::float8 as "mSeq", m.sender_user_id as "mSenderUserId", m.kind as "mKind",
  m.body as "mBody", m.file_meta as "mFileMeta", m.card_text as "mCardText", m.sent_at as "mSentAt", m.edited_at as "mEditedAt", m.deleted_at as "mDeletedAt",
  m.client_message_id as "mClientMessageId"`;

/** A claimed row and, flattened beside it, the message it points at (all null when none). */
interface ClaimResultRow extends ClaimedRow {
  exhausted: boolean;
  mId: string | null;
  mChatId: string;
  mSeq: number;
  mSenderUserId: string;
  mKind: string;
  mBody: string | null;
  mFileMeta: unknown;
  mCardText: string | null;
  mSentAt: Date;
  mEditedAt: Date | null;
  mDeletedAt: Date | null;
  mClientMessageId: string | null;
}

function claimedOf(r: ClaimResultRow): ClaimedRow & { exhausted: boolean; message?: MessageRef | null } {
  const { mId, mChatId, mSeq, mSenderUserId, mKind, mBody, mFileMeta, mCardText, mSentAt, mEditedAt, mDeletedAt, mClientMessageId, ...row } = r;
  if (row.messageId === null) return row;
  const message: MessageRef | null =
    mId === null
      ? null
      : { id: mId, chatId: mChatId, seq: mSeq, senderUserId: mSenderUserId, kind: mKind, body: mBody, fileMeta: mFileMeta, cardText: mCardText, sentAt: mSentAt, editedAt: mEditedAt, deletedAt: mDeletedAt, clientMessageId: mClientMessageId };
  return { ...row, message };
}

/**
 * What the claim reads for the messenger's rows: each message row's message, and a chat row's
 * membership version (`ch`); a chat's new messages take their stream slots in Seq order.
 */
export const MESSENGER_CLAIM_READS: ClaimReads = {
  columns: sql.raw(`, ${MESSAGE_OF_ROW}`),
  joins: sql.raw(`left join messenger.messages m on m.id = c."messageId"`),
  groupVersionJoin: sql.raw(`left join messenger.chats ch on ch.id = c."chatId" and c."targetKind" = 'ChatGroup'`),
  seqOrdered: ['MessageReceived'],
  take: (r) => claimedOf(r as ClaimResultRow),
};

/** The messenger's registration: its kinds with their load and build steps, join minting, claim reads, the stream's group spans and its refusal of inactive readers. */
export const messengerPushKinds = (mintJoin: MediaJoinMinter): KindRegistration<RealtimeRefs, JoinFor> => ({
  owner: 'messenger',
  referenced: {
    kinds: MESSENGER_PUSH_KINDS,
    load: loadRefs,
    build: buildDelivery,
    mintJoin,
    disconnectReason: USER_INACTIVE_CLOSE_REASON,
    claimReads: MESSENGER_CLAIM_READS,
    // The stream reads a chat's events in the spans its reader was a member (written with each membership change).
    groupSpans: (userId) => sql`select chat_id, from_version, to_version from messenger.chat_membership_spans where user_id = ${userId}`,
  },
  // As on every messenger route: a blocked or archived user reads no stream (403 MSG_USER_INACTIVE).
  refuseReader: refuseInactiveUser,
  refuseReaderCodes: ['MSG_USER_INACTIVE'],
  // The event stream's answer is documented by these (platform/push stream-schema.ts).
  frames: MESSENGER_FRAME_SCHEMAS,
});
