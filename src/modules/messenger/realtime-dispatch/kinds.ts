/**
 * The enums of messenger.realtime_outbox (seed 000) and the other value sets of the chats, calls and
 * conferences the outbox rows point at. Plain string unions: rows store them as varchar
 * (`.HasConversion<string>()` in the seed), check constraints keep the database honest.
 */

export const REALTIME_DISPATCH_KINDS = [
  'MessageReceived',
  'MessageEdited',
  'MessageDeleted',
  'ReadReceiptUpdated',
  'ChatUpdated',
  'ContactRequestReceived',
  'ContactRequestAccepted',
  'ContactRemoved',
  'CallInvited',
  'CallAnswered',
  'CallDeclined',
  'CallMissed',
  'CallCancelled',
  'CallEnded',
  'ConferenceInvited',
  'ConferenceStarted',
  'ConferenceEnded',
  'ConferenceParticipantJoined',
  'ConferenceParticipantLeft',
  'RecordingStarted',
  'RecordingStopped',
  'RecordingAvailable',
  'RecordingFailed',
  'ScreenShareStarted',
  'ScreenShareStopped',
  'BlacklistChanged',
] as const;
export type RealtimeDispatchKind = (typeof REALTIME_DISPATCH_KINDS)[number];

export const REALTIME_TARGET_KINDS = ['ChatGroup', 'User'] as const;
export type RealtimeTargetKind = (typeof REALTIME_TARGET_KINDS)[number];

export const REALTIME_OUTBOX_STATUSES = ['Pending', 'Done', 'Quarantined'] as const;
export type RealtimeOutboxStatus = (typeof REALTIME_OUTBOX_STATUSES)[number];

export const SESSION_KINDS = ['Direct', 'Conference'] as const;
export type SessionKind = (typeof SESSION_KINDS)[number];

/** Kinds whose payload carries a MediaJoinModel minted per recipient at delivery (never stored). */
export const JOIN_KINDS: ReadonlySet<RealtimeDispatchKind> = new Set(['CallInvited', 'ConferenceInvited', 'ConferenceStarted']);

/** Kinds about a media session: SessionKind picks their payload contract (1:1 call or conference). */
export const MEDIA_KINDS: ReadonlySet<RealtimeDispatchKind> = new Set(
  REALTIME_DISPATCH_KINDS.filter((k) => /^(Call|Conference|Recording|ScreenShare)/.test(k)),
);

export const MESSAGE_KINDS: ReadonlySet<RealtimeDispatchKind> = new Set(['MessageReceived', 'MessageEdited', 'MessageDeleted']);

/** The hub event name of a kind: snake_case of the enum value (MessageReceived → message_received). */
export const eventNameOf = (kind: RealtimeDispatchKind): string => kind.replace(/(?<!^)([A-Z])/g, '_$1').toLowerCase();

export const chatGroup = (chatId: string): string => `chat:${chatId}`;

// ---- the entities the rows point at ----

export const CHAT_KINDS = ['Direct', 'Group'] as const;
export type ChatKind = (typeof CHAT_KINDS)[number];
export const PARTICIPANT_ROLES = ['Owner', 'Member'] as const;
export type ParticipantRole = (typeof PARTICIPANT_ROLES)[number];
export const PARTICIPANT_STATUSES = ['Active', 'Removed'] as const;
export type ParticipantStatus = (typeof PARTICIPANT_STATUSES)[number];
/** The chat's system feed (chat-event.md): announced to the chat as ChatUpdated. */
export const CHAT_EVENT_KINDS = ['Created', 'Renamed', 'ParticipantAdded', 'ParticipantRemoved'] as const;
export type ChatEventKind = (typeof CHAT_EVENT_KINDS)[number];
export const MESSAGE_CONTENT_KINDS = ['Text', 'File', 'Card'] as const;
export type MessageContentKind = (typeof MESSAGE_CONTENT_KINDS)[number];
export const CONTACT_STATUSES = ['Pending', 'Accepted', 'Removed'] as const;
export type ContactStatus = (typeof CONTACT_STATUSES)[number];
export const BLACKLIST_STATUSES = ['Blocked', 'Unblocked'] as const;
export type BlacklistStatus = (typeof BLACKLIST_STATUSES)[number];
export const MEDIA_KINDS_AV = ['Audio', 'Video'] as const;
export type MediaKind = (typeof MEDIA_KINDS_AV)[number];
export const SESSION_STATUSES = ['Ringing', 'Active', 'Declined', 'Cancelled', 'Missed', 'Ended'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const ROSTER_STATUSES = ['Invited', 'Joined', 'Left'] as const;
export type RosterStatus = (typeof ROSTER_STATUSES)[number];
export const RECORDING_STATUSES = ['Recording', 'Stopped', 'Available', 'Failed'] as const;
export type RecordingStatus = (typeof RECORDING_STATUSES)[number];
