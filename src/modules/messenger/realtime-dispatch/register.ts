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
import { replyPreviewObject } from '../messages/reply-preview.ts';

/**
 * The messenger's kinds on the kernel's push path (platform/push, registerKinds): its chats,
 * messages, receipts, contacts, blacklist, calls and conferences, built at delivery from their
 * references — loaded once per batch (refs.ts), built per row (payloads.ts), a media invite's
 * MediaJoinModel minted per recipient — and what the claim statement reads for them beside each row:
 * a message row's message (one round trip less before the push), and a chat row's membership
 * version (record-level access at delivery and in the stream; the group concerns stay here).
 */

/** The message's columns read beside a claimed row, each under `m.` and its MessageRef name (the body stays `body`). */
const M = 'm.';
const MESSAGE_OF_ROW = `m.id as "m.id", m.chat_id as "m.chatId", m.seq::float8 as "m.seq", m.sender_user_id as "m.senderUserId", m.kind as "m.kind",
  m.body as "m.body", m.file_meta as "m.fileMeta", m.card_text as "m.cardText", m.sent_at as "m.sentAt", m.edited_at as "m.editedAt", m.deleted_at as "m.deletedAt",
  m.client_message_id as "m.clientMessageId", m.mentioned_user_ids as "m.mentionedUserIds",
  (select ${replyPreviewObject('rp')} from messenger.messages rp where rp.id = m.reply_to_message_id) as "m.replyTo"`;

/** A claimed row with, beside it, the message it points at under `m.` (all null when none). */
function claimedOf(r: ClaimedRow & { exhausted: boolean }): ClaimedRow & { exhausted: boolean; message?: MessageRef | null } {
  const row: Record<string, unknown> = {};
  const message: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(r)) {
    if (key.startsWith(M)) message[key.slice(M.length)] = value;
    else row[key] = value;
  }
  const claimed = row as unknown as ClaimedRow & { exhausted: boolean };
  if (claimed.messageId === null) return claimed;
  return { ...claimed, message: message.id === null ? null : (message as unknown as MessageRef) };
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
  take: claimedOf,
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
