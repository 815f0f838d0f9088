/**
 * Every frame the messenger hub pushes, by event name, with its payload as pushed (PascalCase).
 * Frames pushed through the realtime outbox carry `Cursor`, their place in the caller's event
 * stream (GET /api/events); the client resumes from the last one it got.
 */

interface Streamed {
  /** Opaque: the event's position in the caller's stream. */
  Cursor?: string;
}

export interface MessagePayload extends Streamed {
  ChatId: string;
  MessageId: string;
  Seq: number;
  SenderUserId: string;
  Kind: 'Text' | 'File' | 'Card';
  SentAt: string;
  EditedAt: string | null;
  Deleted: boolean;
  /** The id the sender's client picked for the message (idempotent sends), or null. */
  ClientMessageId: string | null;
  /** The members the message mentions (group chats). */
  MentionedUserIds: string[];
  /** The message this one replies to, as it is at delivery, or null. */
  ReplyTo: ReplyToPayload | null;
  Body?: string | null;
  FileMeta?: { fileId: string; fileName: string; contentType: string; size: number } | null;
  CardText?: string | null;
}

/** A reply's parent: Excerpt is the first 100 characters of its text or card, a file's name; null when deleted or withheld. */
export interface ReplyToPayload {
  MessageId: string;
  Seq: number;
  SenderUserId: string;
  Kind: 'Text' | 'File' | 'Card';
  Excerpt: string | null;
  Deleted: boolean;
}

export interface MessageDeletedPayload extends Streamed {
  ChatId: string;
  MessageId: string;
  Seq: number;
  DeletedAt: string | null;
}

export interface ReadReceiptPayload extends Streamed {
  ChatId: string;
  UserId: string;
  LastReadSeq: number;
}

/**
 * A member's reaction on a message, as it stands when pushed (apply frames of one reaction in any
 * order). `UserId` is the reactor: your own when it is yours (from another of your devices). `Count`
 * is Emoji's count for whom the frame went to; list-messages gives each message's counts as you see them.
 */
export interface ReactionPayload extends Streamed {
  ChatId: string;
  MessageId: string;
  UserId: string;
  Emoji: string;
  /** Whether UserId's reaction with Emoji is there now (false: taken back). */
  Added: boolean;
  Count: number;
}

export interface ChatUpdatedPayload extends Streamed {
  ChatId: string;
  EventId: string;
  Change: 'Created' | 'Renamed' | 'ParticipantAdded' | 'ParticipantRemoved' | string;
  ActorUserId: string;
  SubjectUserId: string | null;
  OccurredAt: string;
}

export interface ContactPayload extends Streamed {
  ContactId: string;
  /** The other party (null once their account is gone). */
  UserId: string | null;
  Status: string;
}

export interface BlacklistPayload extends Streamed {
  EntryId: string;
  BlockedUserId: string;
  Status: string;
}

/**
 * Your notification level of a chat changed on one of your devices (PUT …/chats/{chatId}/notifications):
 * sent to your own devices only, with the level as set then. In the event stream: resumed after a reconnect.
 */
export interface NotificationLevelPayload extends Streamed {
  ChatId: string;
  Level: 'all' | 'mentions' | 'off';
}

/** A personal MediaJoinModel: only on a live invite of an open session, never on a replayed one. */
export interface MediaJoin {
  RoomName: string;
  AccessToken: string;
  ExpiresAt: string;
  IceServers: { Urls: string[]; Username: string; Credential: string }[];
}

export interface CallPayload extends Streamed {
  CallId: string;
  SessionKind: 'Direct';
  ChatId: string | null;
  CallerUserId: string;
  /** null for a call whose callee is gone. */
  CalleeUserId: string | null;
  Media: 'Audio' | 'Video';
  Status: string;
  RoomName: string;
  EndedByUserId?: string;
  Join?: MediaJoin;
}

/** The conference contract every conference frame carries. */
export interface ConferenceFields extends Streamed {
  ConferenceId: string;
  SessionKind: 'Conference';
  ChatId: string | null;
  StartedByUserId: string;
  Media: 'Audio' | 'Video';
  Status: string;
  RoomName: string;
}

export interface ConferencePayload extends ConferenceFields {
  EndedByUserId?: string;
  Join?: MediaJoin;
}

export interface RosterPayload extends ConferenceFields {
  UserId: string;
  ParticipantStatus: string;
  ScreenSharing: boolean;
}

export interface RecordingPayload extends ConferenceFields {
  RecordingId: string;
  RecordingStatus: string;
  ErrorCode: string | null;
}

/** A contact or Direct-chat peer came online or went offline. Live only: no Cursor, not replayed. */
export interface PresencePayload {
  UserId: string;
  Online: boolean;
  /** When their last connection closed (ISO-8601); null when they came online. */
  LastSeenAt: string | null;
}

/** Another member is typing in a chat (the client calls typing() every few seconds while its user types). Live only. */
export interface TypingPayload {
  ChatId: string;
  UserId: string;
}

/**
 * A notification of this user changed status or was read (the notifications service's
 * NotificationStatusChanged). In the event stream: resumed after a reconnect. Delivered at least
 * once: keep the highest Version per NotificationId.
 */
export interface NotificationStatusPayload extends Streamed {
  NotificationId: string;
  Channel: string;
  Status: string;
  Terminal: boolean;
  DeliveryCycle: number;
  ErrorCode: string | null;
  ReadAt: string | null;
  /** What POST /api/notifications/{id}/read expects next. */
  Version: number;
  OccurredAt: string;
}

/** A new in-app notification of this user. Live only: no Cursor, not replayed (list them with GET /api/notifications). */
export interface NotificationCreatedPayload {
  NotificationId: string;
  Title: string;
  Body: string;
  Data: Record<string, unknown>;
  CreatedAt: string;
  /** What POST /api/notifications/{id}/read expects. */
  Version: number;
}

export interface MessengerEventMap {
  message_received: MessagePayload;
  message_edited: MessagePayload;
  message_deleted: MessageDeletedPayload;
  read_receipt_updated: ReadReceiptPayload;
  reaction_changed: ReactionPayload;
  chat_updated: ChatUpdatedPayload;
  contact_request_received: ContactPayload;
  contact_request_accepted: ContactPayload;
  contact_removed: ContactPayload;
  blacklist_changed: BlacklistPayload;
  notification_level_changed: NotificationLevelPayload;
  call_invited: CallPayload;
  call_answered: CallPayload;
  call_declined: CallPayload;
  call_missed: CallPayload;
  call_cancelled: CallPayload;
  call_ended: CallPayload;
  conference_invited: ConferencePayload;
  conference_started: ConferencePayload;
  conference_ended: ConferencePayload;
  conference_participant_joined: RosterPayload;
  conference_participant_left: RosterPayload;
  screen_share_started: RosterPayload;
  screen_share_stopped: RosterPayload;
  recording_started: RecordingPayload;
  recording_stopped: RecordingPayload;
  recording_available: RecordingPayload;
  recording_failed: RecordingPayload;
  presence_changed: PresencePayload;
  typing: TypingPayload;
  notification_status_changed: NotificationStatusPayload;
  notification_created: NotificationCreatedPayload;
}

export type MessengerEventName = keyof MessengerEventMap;

/** One pushed (or replayed) event, as a union the app can switch on by `name`. */
export type MessengerEvent = { [K in MessengerEventName]: { name: K; payload: MessengerEventMap[K] } }[MessengerEventName];
