/**
 * The messenger's kinds on the kernel's push path (seed 000's RealtimeDispatchKind): what its push
 * intents announce. Plain string unions: rows store them as varchar (`.HasConversion<string>()` in
 * the seed); the push part checks them when they are registered (register.ts) and refuses any other
 * at its writer. The value sets of the chats, messages, contacts and calls the rows point at stand
 * beside this file (model/*-kinds.ts).
 */

/** The kinds the messenger owns on the push path (registered with it: register.ts). */
export const MESSENGER_PUSH_KINDS = [
  'MessageReceived',
  'MessageEdited',
  'MessageDeleted',
  'ReadReceiptUpdated',
  'ReactionChanged',
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
 * The messenger's carried kinds (platform/push port.ts): the row holds the frame as committed and it
 * goes to the one user's own devices, user:{UserId}. A notification level announces a moment — the
 * level the user set then — which rebuilding from the participant row at delivery would blur (two
 * quick changes would both announce the last), so it is carried, not referenced.
 */
export const MESSENGER_CARRIED_KINDS = ['NotificationLevelChanged'] as const;
export type MessengerCarriedKind = (typeof MESSENGER_CARRIED_KINDS)[number];

/** Kinds whose payload carries a MediaJoinModel minted per recipient at delivery (never stored). */
export const JOIN_KINDS: ReadonlySet<MessengerPushKind> = new Set(['CallInvited', 'ConferenceInvited', 'ConferenceStarted']);

/** The hub event name of a kind: snake_case of the enum value (MessageReceived → message_received); the push part's one rule. */
export { eventNameOf } from '../../../platform/push/index.ts';
