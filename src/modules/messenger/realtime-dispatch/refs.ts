import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { JOIN_KINDS, type MessengerPushKind } from '../model/push-kinds.ts';
import { reactionCountsFor } from '../model/reaction-visibility.ts';
import { emptyRefs, reactionKey, type OutboxRowRef, type RealtimeRefs } from './payloads.ts';
import type { MessageRef, ReactionRef } from './ref-types.ts';
import { replyPreviewObject } from '../messages/reply-preview.ts';

/**
 * Reads what a claimed batch points at, one query per entity kind present (outside any transaction:
 * the build is a read-only projection, seed 000 "Граница транзакции"). A missing entity is simply
 * absent from the maps; the payload builder turns that into a quarantine.
 */

const ROSTER_KINDS = new Set<MessengerPushKind>(['ConferenceParticipantJoined', 'ConferenceParticipantLeft', 'ScreenShareStarted', 'ScreenShareStopped']);
const RECORDING_KINDS = new Set<MessengerPushKind>(['RecordingStarted', 'RecordingStopped', 'RecordingAvailable', 'RecordingFailed']);
const CONTACT_KINDS = new Set<MessengerPushKind>(['ContactRequestReceived', 'ContactRequestAccepted', 'ContactRemoved']);

const ids = (rows: readonly OutboxRowRef[], pick: (r: OutboxRowRef) => boolean, field: 'refId' | 'messageId' | 'chatId'): string[] => [
  ...new Set(rows.filter(pick).map((r) => r[field]).filter((v): v is string => v !== null)),
];

/** `statement(ids)` reads the rows of those ids (`= any(ids)`); nothing is read for none. */
async function byId<T extends { id: string }>(db: Db, statement: (ids: SQL) => SQL, list: string[], into: Map<string, T>): Promise<void> {
  if (list.length === 0) return;
  const { rows } = await query<T>(db, statement(sql`${sql.param(list)}::uuid[]`));
  for (const r of rows) into.set(r.id, r);
}

const sessionsOf = (ids: SQL) => sql`select id, session_kind as "sessionKind", chat_id as "chatId", initiator_user_id as "initiatorUserId",
  callee_user_id as "calleeUserId", media, status, room_name as "roomName", ended_by_user_id as "endedByUserId"
  from messenger.media_sessions where id = any(${ids})`;

/**
 * The reactions of reaction_changed rows, each with its emoji's count as the row's audience sees it
 * (TargetUserId, or null for the chat): one statement for the batch.
 */
async function loadReactions(db: Db, rows: readonly OutboxRowRef[], into: Map<string, ReactionRef>): Promise<void> {
  const pairs = [...new Map(rows.filter((r) => r.kind === 'ReactionChanged' && r.refId).map((r) => [reactionKey(r), r])).values()];
  if (pairs.length === 0) return;
  const { rows: found } = await query<ReactionRef & { viewer: string | null }>(
    db,
    sql`select r.id, m.chat_id as "chatId", r.message_id as "messageId", r.user_id as "userId", r.emoji, r.removed_at is null as added, x.viewer,
               (select count(*)::int from messenger.message_reactions o
                 where o.message_id = r.message_id and o.emoji = r.emoji and o.removed_at is null
                   and ${reactionCountsFor(sql`x.viewer`, sql`o.user_id`, sql`m.chat_id`)}) as count
          from unnest(${sql.param(pairs.map((r) => r.refId))}::uuid[], ${sql.param(pairs.map((r) => r.targetUserId))}::uuid[]) x(rid, viewer)
          join messenger.message_reactions r on r.id = x.rid
          join messenger.messages m on m.id = r.message_id`,
  );
  for (const { viewer, ...r } of found) into.set(reactionKey({ refId: r.id, targetUserId: viewer }), r);
}

/** A message as the claim read it beside its row (register.ts): its parent's id, not yet its preview. */
type ClaimedMessage = Omit<MessageRef, 'replyTo'> & { replyToMessageId: string | null };

/** The previews of the claimed replies' parents, in one query, into their messages. */
async function loadReplyPreviews(db: Db, claimed: readonly ClaimedMessage[], into: Map<string, MessageRef>): Promise<void> {
  const parents = [...new Set(claimed.flatMap((m) => (m.replyToMessageId ? [m.replyToMessageId] : [])))];
  if (parents.length === 0) return;
  const { rows } = await query<{ id: string; preview: MessageRef['replyTo'] }>(
    db,
    sql`select p.id, ${sql.raw(replyPreviewObject('p'))} as preview from messenger.messages p where p.id = any(${sql.param(parents)}::uuid[])`,
  );
  const previews = new Map(rows.map((r) => [r.id, r.preview]));
  for (const m of claimed) if (m.replyToMessageId) into.get(m.id)!.replyTo = previews.get(m.replyToMessageId) ?? null;
}

export async function loadRefs(db: Db, rows: readonly (OutboxRowRef & { message?: ClaimedMessage | null })[]): Promise<RealtimeRefs> {
  const refs = emptyRefs();
  // The claim already read the messages of message rows (`message` set, null when it is gone).
  const claimed = rows.flatMap((r) => (r.message ? [r.message] : []));
  for (const { replyToMessageId: _parent, ...m } of claimed) refs.messages.set(m.id, { ...m, replyTo: null });
  const messageIds = ids(rows, (r) => r.messageId !== null && (r as { message?: unknown }).message === undefined, 'messageId');
  const participantIds = ids(rows, (r) => r.kind === 'ReadReceiptUpdated', 'refId');
  const eventIds = ids(rows, (r) => r.kind === 'ChatUpdated', 'refId');
  const contactIds = ids(rows, (r) => CONTACT_KINDS.has(r.kind), 'refId');
  const blacklistIds = ids(rows, (r) => r.kind === 'BlacklistChanged', 'refId');
  const rosterIds = ids(rows, (r) => ROSTER_KINDS.has(r.kind), 'refId');
  const recordingIds = ids(rows, (r) => RECORDING_KINDS.has(r.kind), 'refId');
  const sessionIds = ids(rows, (r) => /^(Call|Conference(Invited|Started|Ended))/.test(r.kind), 'refId');
  // Whose replica activity the build judges: deactivated users, and the recipients of personal invites (no token for an inactive one).
  const judged = (r: OutboxRowRef) => r.kind === 'UserDeactivated' || (JOIN_KINDS.has(r.kind) && r.targetKind === 'User');
  const deactivated = [...new Set(rows.filter((r) => judged(r) && r.targetUserId).map((r) => r.targetUserId!))];
  const memberChats = ids(rows, (r) => (JOIN_KINDS.has(r.kind) || r.kind === 'ChatUpdated') && r.targetKind === 'ChatGroup', 'chatId');

  await Promise.all([
    loadReplyPreviews(db, claimed, refs.messages),
    loadReactions(db, rows, refs.reactions),
    byId(
      db,
      (ids) => sql`select m.id, m.chat_id as "chatId", m.seq::float8 as seq, m.sender_user_id as "senderUserId", m.kind, m.body, m.file_meta as "fileMeta",
              m.card_text as "cardText", m.sent_at as "sentAt", m.edited_at as "editedAt", m.deleted_at as "deletedAt", m.client_message_id as "clientMessageId",
              m.mentioned_user_ids as "mentionedUserIds",
              (select ${sql.raw(replyPreviewObject('rp'))} from messenger.messages rp where rp.id = m.reply_to_message_id) as "replyTo"
         from messenger.messages m where m.id = any(${ids})`,
      messageIds,
      refs.messages,
    ),
    byId(
      db,
      (ids) => sql`select id, chat_id as "chatId", user_id as "userId", status, last_read_seq::float8 as "lastReadSeq"
         from messenger.chat_participants where id = any(${ids})`,
      participantIds,
      refs.participants,
    ),
    byId(
      db,
      (ids) => sql`select e.id, e.chat_id as "chatId", e.kind, e.actor_user_id as "actorUserId", e.subject_user_id as "subjectUserId",
              e.created_at as "createdAt", coalesce(p.status = 'Active', false) as "subjectActive"
         from messenger.chat_events e
         left join messenger.chat_participants p on p.chat_id = e.chat_id and p.user_id = e.subject_user_id
        where e.id = any(${ids})`,
      eventIds,
      refs.chatEvents,
    ),
    byId(
      db,
      (ids) => sql`select id, requester_user_id as "requesterUserId", addressee_user_id as "addresseeUserId", status, removed_by_user_id as "removedByUserId"
         from messenger.contacts where id = any(${ids})`,
      contactIds,
      refs.contacts,
    ),
    byId(
      db,
      (ids) => sql`select id, owner_user_id as "ownerUserId", blocked_user_id as "blockedUserId", status
         from messenger.blacklist_entries where id = any(${ids})`,
      blacklistIds,
      refs.blacklist,
    ),
    byId(
      db,
      (ids) => sql`select id, session_id as "sessionId", user_id as "userId", status, screen_sharing as "screenSharing"
         from messenger.media_session_participants where id = any(${ids})`,
      rosterIds,
      refs.roster,
    ),
    byId(
      db,
      (ids) => sql`select id, session_id as "sessionId", status, error_code as "errorCode" from messenger.call_recordings where id = any(${ids})`,
      recordingIds,
      refs.recordings,
    ),
    memberChats.length === 0
      ? Promise.resolve()
      : query<{ chatId: string; users: string[] }>(
          db,
          // A blocked or archived participant is no recipient: no frame and no join token for them.
          sql`select p.chat_id as "chatId", array_agg(p.user_id order by p.user_id) as users
                from messenger.chat_participants p
               where p.chat_id = any(${sql.param(memberChats)}::uuid[]) and p.status = 'Active'
                 and not exists (select 1 from messenger.users u where u.id = p.user_id and not u.is_active)
               group by p.chat_id`,
        ).then(({ rows: r }) => r.forEach((m) => refs.chatMembers.set(m.chatId, m.users))),
    deactivated.length === 0
      ? Promise.resolve()
      : query<{ id: string }>(
          db,
          sql`select id from messenger.users where id = any(${sql.param(deactivated)}::uuid[]) and not is_active`,
        ).then(({ rows: r }) => r.forEach((u) => refs.inactiveUsers.add(u.id))),
  ]);
  // Roster and recording rows name their session; load those with the ones rows name directly.
  const more = [...refs.roster.values(), ...refs.recordings.values()].map((r) => r.sessionId);
  await byId(db, sessionsOf, [...new Set([...sessionIds, ...more])], refs.sessions);
  return refs;
}
