/**
 * The enums of push.realtime_outbox (seed 000): what a push intent announces, to whom, and
 * where it stands. Plain string unions: rows store them as varchar (`.HasConversion<string>()` in
 * the seed), check constraints keep the database honest. The value sets of the chats, messages,
 * contacts and calls the rows point at stand beside this file (model/*-kinds.ts).
 */

/** The kinds the messenger owns on the push path (registered with it: register.ts). */
export const MESSENGER_PUSH_KINDS = [
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
  /** The user replica turned a user inactive (seed 002): its hub connections are closed on every replica; nothing is sent. */
  'UserDeactivated',
] as const;
export type MessengerPushKind = (typeof MESSENGER_PUSH_KINDS)[number];

/**
 * The kinds push.realtime_outbox admits (its check constraint ck_rto_kind, in the messenger's
 * drizzle part): the messenger's own, and the kinds other modules carry through the push part,
 * named here only because the table's constraint lists them.
 */
export const REALTIME_DISPATCH_KINDS = [
  ...MESSENGER_PUSH_KINDS,
  /**
   * Another module's frame to user:{TargetUserId}, carried in the row (a carried kind registered
   * with the push part, platform/push/port.ts): the notifications' NotificationStatusChanged.
   */
  'NotificationStatusChanged',
] as const;
export type RealtimeDispatchKind = (typeof REALTIME_DISPATCH_KINDS)[number];

export const REALTIME_TARGET_KINDS = ['ChatGroup', 'User'] as const;
export type RealtimeTargetKind = (typeof REALTIME_TARGET_KINDS)[number];

export const REALTIME_OUTBOX_STATUSES = ['Pending', 'Done', 'Quarantined'] as const;
export type RealtimeOutboxStatus = (typeof REALTIME_OUTBOX_STATUSES)[number];


/** Kinds whose payload carries a MediaJoinModel minted per recipient at delivery (never stored). */
export const JOIN_KINDS: ReadonlySet<MessengerPushKind> = new Set(['CallInvited', 'ConferenceInvited', 'ConferenceStarted']);

/** The hub event name of a kind: snake_case of the enum value (MessageReceived → message_received); the push part's one rule. */
export { eventNameOf } from '../../../platform/push/index.ts';
