import type { ReplyPreview } from '../messages/reply-preview.ts';

/**
 * The entities a claimed batch of realtime_outbox rows points at, as the payload builders read
 * them (loaded by refs.ts; a missing one is simply absent from its map).
 */

export interface MessageRef {
  id: string;
  chatId: string;
  seq: number;
  senderUserId: string;
  kind: string;
  body: string | null;
  fileMeta: unknown;
  cardText: string | null;
  sentAt: Date;
  editedAt: Date | null;
  deletedAt: Date | null;
  /** The sender's own id for the message (idempotent sends), so the sender's other devices match their optimistic copy. */
  clientMessageId: string | null;
  /** The members it mentions (group chats). */
  mentionedUserIds: string[];
  /** The parent's preview as it is now (messages/replies.ts), or null: no reply. */
  replyTo: ReplyPreview | null;
}
/** A reaction as a reaction_changed frame reads it at delivery, with its emoji's count for the frame's audience. */
export interface ReactionRef {
  id: string;
  chatId: string;
  messageId: string;
  userId: string;
  emoji: string;
  added: boolean;
  count: number;
}
export interface ParticipantRef {
  id: string;
  chatId: string;
  userId: string;
  status: string;
  lastReadSeq: number;
}
export interface ChatEventRef {
  id: string;
  chatId: string;
  kind: string;
  actorUserId: string;
  subjectUserId: string | null;
  /** Whether the subject is an Active participant now (decides a join/leave replayed late). */
  subjectActive: boolean;
  createdAt: Date;
}
export interface ContactRef {
  id: string;
  requesterUserId: string;
  addresseeUserId: string;
  status: string;
  removedByUserId: string | null;
}
export interface BlacklistRef {
  id: string;
  ownerUserId: string;
  blockedUserId: string;
  status: string;
}
export interface SessionRef {
  id: string;
  sessionKind: string;
  chatId: string | null;
  initiatorUserId: string;
  calleeUserId: string | null;
  media: string;
  status: string;
  roomName: string;
  endedByUserId: string | null;
}
export interface RosterRef {
  id: string;
  sessionId: string;
  userId: string;
  status: string;
  screenSharing: boolean;
}
export interface RecordingRef {
  id: string;
  sessionId: string;
  status: string;
  errorCode: string | null;
}

/** Everything a batch's rows point at, by id. */
export interface RealtimeRefs {
  messages: Map<string, MessageRef>;
  participants: Map<string, ParticipantRef>;
  /** By `${RefId}:${TargetUserId}`: a reaction's count depends on whom its frame goes to (model/reaction-visibility.ts). */
  reactions: Map<string, ReactionRef>;
  chatEvents: Map<string, ChatEventRef>;
  contacts: Map<string, ContactRef>;
  blacklist: Map<string, BlacklistRef>;
  sessions: Map<string, SessionRef>;
  roster: Map<string, RosterRef>;
  recordings: Map<string, RecordingRef>;
  /**
   * Active participants per chat who are not inactive in the replica: join kinds addressed to a
   * chat (one MediaJoinModel each), chat creation.
   */
  chatMembers: Map<string, string[]>;
  /**
   * Users of UserDeactivated rows and recipients of personal invites (join kinds to a user) who are
   * inactive in the replica now (a reactivated one is left alone; an invite is not sent to an inactive one).
   */
  inactiveUsers: Set<string>;
}

export const emptyRefs = (): RealtimeRefs => ({
  messages: new Map(),
  participants: new Map(),
  reactions: new Map(),
  chatEvents: new Map(),
  contacts: new Map(),
  blacklist: new Map(),
  sessions: new Map(),
  roster: new Map(),
  recordings: new Map(),
  chatMembers: new Map(),
  inactiveUsers: new Set(),
});
