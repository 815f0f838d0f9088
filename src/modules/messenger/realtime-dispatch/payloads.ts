import { REF_NOT_FOUND, type BuildResult as PushBuildResult, type Delivery as PushDelivery, type HubSend as PushSend, type Payload, type PushTargetKind } from '../../../platform/push/index.ts';
import { userGroup } from '../../../platform/realtime/index.ts';
import { isSessionOpen, type SessionKind } from '../model/call-kinds.ts';
import { chatGroup } from '../model/chat-kinds.ts';
import { JOIN_KINDS, eventNameOf, type MessengerPushKind } from '../model/push-kinds.ts';
import type { ChatEventRef, MessageRef, RealtimeRefs, SessionRef } from './ref-types.ts';

export { emptyRefs, type RealtimeRefs } from './ref-types.ts';

/**
 * The typed RealtimeMessage contracts (seed 000 step 5), built at delivery from the row's reference
 * ids and the entities they point at. Only message kinds carry a body, and only to chat:{ChatId} — or
 * to the sender's own user:{UserId} for a message withheld from the other member (messages/send.ts);
 * everything else carries ids and statuses. Media kinds take their contract from SessionKind
 * (Direct → the 1:1 call contract, Conference → the conference contract). Pure: the dispatcher
 * loads the entities (refs.ts) and mints MediaJoinModels for `joinFor` sends.
 */

export interface OutboxRowRef {
  id: string;
  kind: MessengerPushKind;
  targetKind: PushTargetKind;
  chatId: string | null;
  targetUserId: string | null;
  messageId: string | null;
  refId: string | null;
  sessionKind: SessionKind | null;
  seq: number | null;
}

export type { MembershipOp, Payload } from '../../../platform/push/index.ts';

/** What a media invite's send asks the dispatcher to mint at delivery (a MediaJoinModel for this user and room). */
export interface JoinFor {
  userId: string;
  sessionId: string;
  roomName: string;
}

/** The push part's delivery types with the messenger's join request (platform/push delivery.ts). */
export type HubSend = PushSend<JoinFor>;
export type Delivery = PushDelivery<JoinFor>;
export type BuildResult = PushBuildResult<JoinFor>;

const missing: BuildResult = { ok: false, code: REF_NOT_FOUND };
const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** A reaction row's key in RealtimeRefs.reactions: its count is its audience's. */
export const reactionKey = (row: Pick<OutboxRowRef, 'refId' | 'targetUserId'>): string => `${row.refId ?? ''}:${row.targetUserId ?? ''}`;

/** The group a row addresses: chat:{ChatId} or user:{TargetUserId}. */
export function targetGroupOf(row: OutboxRowRef): string {
  return row.targetKind === 'ChatGroup' ? chatGroup(row.chatId!) : userGroup(row.targetUserId!);
}

/** Projection of a message for chat:{ChatId}; the body only while the message is not deleted. */
export function messageProjection(m: MessageRef): Payload {
  const content: Payload =
    m.deletedAt !== null ? {} : m.kind === 'File' ? { FileMeta: m.fileMeta } : m.kind === 'Card' ? { CardText: m.cardText } : { Body: m.body };
  return {
    ChatId: m.chatId,
    MessageId: m.id,
    Seq: m.seq,
    SenderUserId: m.senderUserId,
    Kind: m.kind,
    SentAt: m.sentAt.toISOString(),
    EditedAt: iso(m.editedAt),
    Deleted: m.deletedAt !== null,
    ClientMessageId: m.clientMessageId,
    MentionedUserIds: m.mentionedUserIds,
    ReplyTo: m.replyTo && {
      MessageId: m.replyTo.messageId,
      Seq: m.replyTo.seq,
      SenderUserId: m.replyTo.senderUserId,
      Kind: m.replyTo.kind,
      Excerpt: m.replyTo.excerpt,
      Deleted: m.replyTo.deleted,
    },
    ...content,
  };
}

/** The 1:1 call contract (to user:{UserId}). */
function directContract(s: SessionRef): Payload {
  return {
    CallId: s.id,
    SessionKind: 'Direct',
    ChatId: s.chatId,
    CallerUserId: s.initiatorUserId,
    CalleeUserId: s.calleeUserId,
    Media: s.media,
    Status: s.status,
    RoomName: s.roomName,
  };
}

/** The conference contract (to chat:{ChatId}). */
function conferenceContract(s: SessionRef): Payload {
  return {
    ConferenceId: s.id,
    SessionKind: 'Conference',
    ChatId: s.chatId,
    StartedByUserId: s.initiatorUserId,
    Media: s.media,
    Status: s.status,
    RoomName: s.roomName,
  };
}

/** The session a media row is about, whichever entity its RefId names. */
function sessionOf(row: OutboxRowRef, refs: RealtimeRefs): { session: SessionRef; extra: Payload } | undefined {
  const id = row.refId ?? '';
  switch (row.kind) {
    case 'ConferenceParticipantJoined':
    case 'ConferenceParticipantLeft':
    case 'ScreenShareStarted':
    case 'ScreenShareStopped': {
      const r = refs.roster.get(id);
      const session = r && refs.sessions.get(r.sessionId);
      return session && r ? { session, extra: { UserId: r.userId, ParticipantStatus: r.status, ScreenSharing: r.screenSharing } } : undefined;
    }
    case 'RecordingStarted':
    case 'RecordingStopped':
    case 'RecordingAvailable':
    case 'RecordingFailed': {
      const r = refs.recordings.get(id);
      const session = r && refs.sessions.get(r.sessionId);
      return session && r ? { session, extra: { RecordingId: r.id, RecordingStatus: r.status, ErrorCode: r.errorCode } } : undefined;
    }
    default: {
      const session = refs.sessions.get(id);
      return session ? { session, extra: session.endedByUserId ? { EndedByUserId: session.endedByUserId } : {} } : undefined;
    }
  }
}

function buildMedia(row: OutboxRowRef, refs: RealtimeRefs, event: string): BuildResult {
  const found = sessionOf(row, refs);
  if (!found) return missing;
  const { session, extra } = found;
  const contractKind = row.sessionKind ?? (session.sessionKind as SessionKind);
  const payload = { ...(contractKind === 'Direct' ? directContract(session) : conferenceContract(session)), ...extra };
  if (!JOIN_KINDS.has(row.kind)) return { ok: true, delivery: { sends: [{ group: targetGroupOf(row), event, payload }] } };
  // An invite whose session ended before delivery still goes out (the missed call or conference is
  // a fact the client shows), with the session's final Status and no MediaJoinModel: a token is
  // never minted for a session that is over. Judged by the session as loaded for this delivery.
  const open = isSessionOpen(session.status);
  const joinFor = (userId: string) => (open ? { joinFor: { userId, sessionId: session.id, roomName: session.roomName } } : {});
  if (row.targetKind === 'User') {
    // A blocked or archived invitee is refused everything in the messenger: no invite, no token.
    if (refs.inactiveUsers.has(row.targetUserId!)) return { ok: true, delivery: { sends: [] } };
    return { ok: true, delivery: { sends: [{ group: userGroup(row.targetUserId!), event, payload, ...joinFor(row.targetUserId!) }] } };
  }
  // A join model is personal: a chat-wide frame would hand one member's token to everyone, so the
  // conference contract goes to each active participant of chat:{ChatId} through its user group
  // (inactive users are not among chatMembers: nothing is sent or minted for them).
  const members = refs.chatMembers.get(row.chatId!) ?? [];
  return { ok: true, delivery: { sends: members.map((u) => ({ group: userGroup(u), event, payload, ...joinFor(u) })) } };
}

/** The group changes a chat event implies, judged by the membership now (a late row never re-adds a removed user). */
function membershipOf(row: OutboxRowRef, e: ChatEventRef, refs: RealtimeRefs): Pick<Delivery, 'membership'> {
  if (row.targetKind !== 'ChatGroup') return {};
  const group = chatGroup(e.chatId);
  if (e.kind === 'Created') return { membership: (refs.chatMembers.get(e.chatId) ?? []).map((userId) => ({ op: 'join', userId, group })) };
  if (!e.subjectUserId) return {};
  if (e.kind === 'ParticipantAdded' && e.subjectActive) return { membership: [{ op: 'join', userId: e.subjectUserId, group }] };
  if (e.kind === 'ParticipantRemoved' && !e.subjectActive) return { membership: [{ op: 'leave', userId: e.subjectUserId, group }] };
  return {};
}

/** One row → what to push where, or the code it is quarantined with. */
export function buildDelivery(row: OutboxRowRef, refs: RealtimeRefs): BuildResult {
  const event = eventNameOf(row.kind);
  const one = (payload: Payload): BuildResult => ({ ok: true, delivery: { sends: [{ group: targetGroupOf(row), event, payload }] } });
  const ref = row.refId ?? '';
  switch (row.kind) {
    case 'MessageReceived':
    case 'MessageEdited': {
      const m = refs.messages.get(row.messageId ?? '');
      return m ? one(messageProjection(m)) : missing;
    }
    case 'MessageDeleted': {
      const m = refs.messages.get(row.messageId ?? '');
      return m ? one({ ChatId: m.chatId, MessageId: m.id, Seq: m.seq, DeletedAt: iso(m.deletedAt) }) : missing;
    }
    case 'ReadReceiptUpdated': {
      const p = refs.participants.get(ref);
      return p ? one({ ChatId: p.chatId, UserId: p.userId, LastReadSeq: row.seq ?? p.lastReadSeq }) : missing;
    }
    case 'ReactionChanged': {
      const r = refs.reactions.get(reactionKey(row));
      return r ? one({ ChatId: r.chatId, MessageId: r.messageId, UserId: r.userId, Emoji: r.emoji, Added: r.added, Count: r.count }) : missing;
    }
    case 'ChatUpdated': {
      const e = refs.chatEvents.get(ref);
      if (!e) return missing;
      const payload = {
        ChatId: e.chatId,
        EventId: e.id,
        Change: e.kind,
        ActorUserId: e.actorUserId,
        SubjectUserId: e.subjectUserId,
        OccurredAt: e.createdAt.toISOString(),
      };
      return { ok: true, delivery: { sends: [{ group: targetGroupOf(row), event, payload }], ...membershipOf(row, e, refs) } };
    }
    case 'ContactRequestReceived':
    case 'ContactRequestAccepted':
    case 'ContactRemoved': {
      const c = refs.contacts.get(ref);
      if (!c) return missing;
      const other = row.kind === 'ContactRequestReceived' ? c.requesterUserId : row.kind === 'ContactRequestAccepted' ? c.addresseeUserId : c.removedByUserId;
      return one({ ContactId: c.id, UserId: other, Status: c.status });
    }
    case 'UserDeactivated': {
      // Judged now: a user active again since is not disconnected by this late row.
      const userId = row.targetUserId ?? '';
      return { ok: true, delivery: { sends: [], ...(refs.inactiveUsers.has(userId) ? { disconnect: userId } : {}) } };
    }
    case 'BlacklistChanged': {
      const b = refs.blacklist.get(ref);
      return b ? one({ EntryId: b.id, BlockedUserId: b.blockedUserId, Status: b.status }) : missing;
    }
    default:
      return buildMedia(row, refs, event);
  }
}
