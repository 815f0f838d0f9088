import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';
import { Nullable, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { MEDIA_KINDS_AV, RECORDING_STATUSES, ROSTER_STATUSES, SESSION_STATUSES } from '../model/call-kinds.ts';
import { CHAT_EVENT_KINDS, NOTIFICATION_LEVELS } from '../model/chat-kinds.ts';
import { BLACKLIST_STATUSES, CONTACT_STATUSES } from '../model/contact-kinds.ts';
import { MESSAGE_CONTENT_KINDS } from '../model/message-kinds.ts';
import { eventNameOf, type MessengerCarriedKind, type MessengerPushKind } from '../model/push-kinds.ts';

/**
 * The payload of every hub frame the realtime dispatcher builds (payloads.ts), as JSON Schema, by
 * hub event name: what a client receives as the one argument of a SignalR invocation. Fields the
 * dispatcher adds on the way out are optional here: `Cursor` (the frame's position in the events
 * stream) and `Join` (a MediaJoinModel minted per recipient for an invite). Objects stay open, so
 * a client must ignore fields it does not know (a frame may gain one). test/modules/messenger/
 * realtime-dispatch/payloads.test.ts checks every frame the builders produce against these.
 */

// Over the element type, not the array's: a map over a generic array types its elements as plain strings.
const literals = <V extends string>(values: readonly V[]) => Type.Union(values.map((v) => Type.Literal(v)));
const Cursor = Type.Optional(Type.String({ description: "The frame's position in the events stream (GET /api/events?after=)" }));
// Generic over the properties so each frame's Static type keeps its fields (the client library's types are checked against them).
const frame = <P extends TProperties>(name: string, description: string, properties: P) => Type.Object({ ...properties, Cursor }, { title: name, description });

const Message = frame('MessageFrame', 'message_received, message_edited: the message as pushed to chat:{ChatId}; exactly one of Body, FileMeta, CardText unless deleted', {
  ChatId: Uuid,
  MessageId: Uuid,
  Seq: Type.Integer({ minimum: 1 }),
  SenderUserId: Uuid,
  Kind: literals(MESSAGE_CONTENT_KINDS),
  SentAt: Timestamp,
  EditedAt: Nullable(Timestamp),
  Deleted: Type.Boolean(),
  ClientMessageId: Nullable(Uuid),
  MentionedUserIds: Type.Array(Uuid, { description: 'The members the message mentions (group chats)' }),
  ReplyTo: Nullable(
    Type.Object(
      {
        MessageId: Uuid,
        Seq: Type.Integer({ minimum: 1 }),
        SenderUserId: Uuid,
        Kind: literals(MESSAGE_CONTENT_KINDS),
        Excerpt: Nullable(Type.String({ description: 'The first 100 characters of the text or card as it is now, the file name of a file; null when deleted or withheld' })),
        Deleted: Type.Boolean(),
      },
      { description: 'The message this one replies to, as it is at delivery' },
    ),
  ),
  Body: Type.Optional(Type.String()),
  FileMeta: Type.Optional(Type.Object({ fileId: Type.String(), fileName: Type.String(), contentType: Type.String(), size: Type.Integer() })),
  CardText: Type.Optional(Type.String()),
});

/** The 1:1 call contract, to user:{UserId}. */
const Call = frame('CallFrame', 'call_*: the 1:1 call contract, to user:{UserId}', {
  CallId: Uuid,
  SessionKind: Type.Literal('Direct'),
  ChatId: Nullable(Uuid),
  CallerUserId: Uuid,
  CalleeUserId: Nullable(Uuid),
  Media: literals(MEDIA_KINDS_AV),
  Status: literals(SESSION_STATUSES),
  RoomName: Type.String(),
  EndedByUserId: Type.Optional(Uuid),
  Join: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'call_invited while the call is open: the MediaJoinModel of this recipient' })),
});

const conferenceFields = {
  ConferenceId: Uuid,
  SessionKind: Type.Literal('Conference'),
  ChatId: Nullable(Uuid),
  StartedByUserId: Uuid,
  Media: literals(MEDIA_KINDS_AV),
  Status: literals(SESSION_STATUSES),
  RoomName: Type.String(),
};
const Conference = frame('ConferenceFrame', 'conference_invited, conference_started, conference_ended: the conference contract', {
  ...conferenceFields,
  EndedByUserId: Type.Optional(Uuid),
  Join: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'invites while the conference is open: the MediaJoinModel of this recipient' })),
});
const Roster = frame('ConferenceParticipantFrame', 'conference_participant_joined/left, screen_share_started/stopped: the conference contract and the participant', {
  ...conferenceFields,
  UserId: Uuid,
  ParticipantStatus: literals(ROSTER_STATUSES),
  ScreenSharing: Type.Boolean(),
});
const Recording = frame('RecordingFrame', 'recording_*: the conference contract and the recording', {
  ...conferenceFields,
  RecordingId: Uuid,
  RecordingStatus: literals(RECORDING_STATUSES),
  ErrorCode: Nullable(Type.String()),
});
const Contact = frame('ContactFrame', 'contact_request_received/accepted, contact_removed: to user:{UserId}; UserId is the other party', {
  ContactId: Uuid,
  UserId: Nullable(Uuid),
  Status: literals(CONTACT_STATUSES),
});

/** Every kind that sends a frame → its payload's schema (UserDeactivated sends none; NotificationStatusChanged is the notifications module's). */
export const MESSENGER_FRAME_SCHEMAS = {
  MessageReceived: Message,
  MessageEdited: Message,
  MessageDeleted: frame('MessageDeletedFrame', 'message_deleted: the tombstone, without the body', { ChatId: Uuid, MessageId: Uuid, Seq: Type.Integer({ minimum: 1 }), DeletedAt: Nullable(Timestamp) }),
  ReactionChanged: frame(
    'ReactionFrame',
    "reaction_changed: a member's reaction on a message, as it stands at delivery (frames of one reaction may be applied in any order). To chat:{ChatId}, or only to the reactor's own user:{UserId} while the chat is a message request to them, a block stands in the Direct chat, or the message is withheld from the other member",
    {
      ChatId: Uuid,
      MessageId: Uuid,
      UserId: Uuid,
      Emoji: Type.String(),
      Added: Type.Boolean({ description: "Whether UserId's reaction with Emoji is on the message now (false: taken back)" }),
      Count: Type.Integer({ minimum: 0, description: 'The reactions with Emoji that count for whom the frame went to (to the chat: those shared with it; your own is in it only if shared)' }),
    },
  ),
  ReadReceiptUpdated: frame('ReadReceiptFrame', "read_receipt_updated: a member's read position", { ChatId: Uuid, UserId: Uuid, LastReadSeq: Type.Integer({ minimum: 0 }) }),
  ChatUpdated: frame('ChatUpdatedFrame', 'chat_updated: a change to the chat or its members', {
    ChatId: Uuid,
    EventId: Uuid,
    Change: literals(CHAT_EVENT_KINDS),
    ActorUserId: Uuid,
    SubjectUserId: Nullable(Uuid),
    OccurredAt: Timestamp,
  }),
  ContactRequestReceived: Contact,
  ContactRequestAccepted: Contact,
  ContactRemoved: Contact,
  CallInvited: Call,
  CallAnswered: Call,
  CallDeclined: Call,
  CallMissed: Call,
  CallCancelled: Call,
  CallEnded: Call,
  ConferenceInvited: Conference,
  ConferenceStarted: Conference,
  ConferenceEnded: Conference,
  ConferenceParticipantJoined: Roster,
  ConferenceParticipantLeft: Roster,
  RecordingStarted: Recording,
  RecordingStopped: Recording,
  RecordingAvailable: Recording,
  RecordingFailed: Recording,
  ScreenShareStarted: Roster,
  ScreenShareStopped: Roster,
  BlacklistChanged: frame('BlacklistFrame', 'blacklist_changed: to the owner of the entry', { EntryId: Uuid, BlockedUserId: Uuid, Status: literals(BLACKLIST_STATUSES) }),
  NotificationLevelChanged: frame(
    'NotificationLevelFrame',
    "notification_level_changed: the caller's notification level of a chat changed (PUT /api/messenger/chats/{chatId}/notifications), to their own user:{UserId} only — their other devices; the level as set then",
    { ChatId: Uuid, Level: literals(NOTIFICATION_LEVELS) },
  ),
} satisfies Partial<Record<MessengerPushKind | MessengerCarriedKind, TSchema>>;

/** Live only (presence/): never in the events stream, so no Cursor. */
export const PresenceChangedFrame = Type.Object(
  { UserId: Uuid, Online: Type.Boolean(), LastSeenAt: Nullable(Timestamp) },
  { title: 'PresenceChangedFrame', description: "presence_changed: to the user's peers when the first connection opens or the last closes (LastSeenAt: when the last closed; null when coming online)" },
);
export type PresenceChangedFrame = Static<typeof PresenceChangedFrame>;
export const TypingFrame = Type.Object({ ChatId: Uuid, UserId: Uuid }, { title: 'TypingFrame', description: "typing: to the chat's other Active members" });
export type TypingFrame = Static<typeof TypingFrame>;

/** The same, by hub event name (message_received, …), with presence and typing. */
export const messengerFramesByEvent = (): Record<string, TSchema> =>
  Object.fromEntries([
    ...Object.entries(MESSENGER_FRAME_SCHEMAS).map(([kind, schema]) => [eventNameOf(kind), schema] as const),
    ['presence_changed', PresenceChangedFrame],
    ['typing', TypingFrame],
  ]);
