import { AppError } from '../../platform/http/index.ts';
import { StreamErrors } from '../../platform/push/index.ts';

/** Stable error codes of the messenger's user replica and contact search (REST `{ code, message }`). */
export const MessengerErrors = {
  /**
   * No active user with the phone a contact search or request names (contact.md INV-CT-6): the
   * replica may not have it yet — a tolerated race. Users named by id: ChatErrors.userNotFound.
   */
  contactUserNotFound: () => new AppError('MSG_CONTACT_USER_NOT_FOUND', 'no active user with this phone number', 404),
  invalidPhone: () =>
    new AppError('MSG_CONTACT_SEARCH_INVALID_PHONE', 'phone is not a valid phone number (use +<country code><number>)', 400),
  searchUnavailable: () =>
    new AppError('MSG_CONTACT_SEARCH_UNAVAILABLE', 'contact search is unavailable right now, try again shortly', 503, { retryAfterSeconds: 5 }),
};

/**
 * Stable error codes of the messenger's chats, messages, contacts, blacklist, calls and conferences
 * (REST `{ code, message }`). A chat, message or call the caller may not see is "not found", so its
 * existence does not leak (record-level rule).
 */
export const ChatErrors = {
  chatNotFound: () => new AppError('MSG_CHAT_NOT_FOUND', 'no chat with this id among your chats', 404),
  invalidChat: (why: string) => new AppError('MSG_CHAT_INVALID', why, 400),
  notChatOwner: () => new AppError('MSG_CHAT_FORBIDDEN', 'only the chat owner (or an admin) may do this', 403),
  directChatFixed: () => new AppError('MSG_CHAT_DIRECT_MEMBERS_FIXED', 'a direct chat always has its two participants', 409),
  chatFull: (max: number) => new AppError('MSG_CHAT_FULL', `a group chat has at most ${max} participants`, 409),
  ownerCannotLeave: () => new AppError('MSG_CHAT_OWNER_CANNOT_LEAVE', 'the owner cannot leave or be removed from the chat', 409),
  participantNotFound: () => new AppError('MSG_PARTICIPANT_NOT_FOUND', 'this user is not an active participant of the chat', 404),
  messageNotFound: () => new AppError('MSG_MESSAGE_NOT_FOUND', 'no message with this id in the chat', 404),
  invalidMessage: (why: string) => new AppError('MSG_MESSAGE_INVALID', why, 400),
  notSender: () => new AppError('MSG_MESSAGE_NOT_SENDER', 'only the sender may change this message', 403),
  editWindowExpired: (seconds: number) =>
    new AppError('MSG_MESSAGE_EDIT_WINDOW_EXPIRED', `a message can be edited only within ${seconds} s of sending (UC-MSG-003)`, 409),
  messageDeleted: () => new AppError('MSG_MESSAGE_DELETED', 'the message was deleted', 409),
  notEditable: () => new AppError('MSG_MESSAGE_NOT_EDITABLE', 'only text and card messages can be edited', 409),
  reactionInvalid: () =>
    new AppError('MSG_REACTION_INVALID', 'a reaction is exactly one emoji (Unicode RGI: 👍, ❤️, 👍🏽, 🇷🇺, a ZWJ sequence), URL-encoded in the path', 400),
  reactionLimit: (max: number) =>
    new AppError('MSG_REACTION_LIMIT_REACHED', `you already have ${max} different reactions on this message: remove one first`, 409),
  replyParentNotFound: () =>
    new AppError('MSG_REPLY_PARENT_NOT_FOUND', 'replyToMessageId names no message of this chat that you can read', 404),
  mentionNotMember: (userId: string) => new AppError('MSG_MENTION_NOT_MEMBER', `mentioned user ${userId} is not an active member of this chat`, 422),
  mentionsGroupOnly: () => new AppError('MSG_MENTIONS_GROUP_ONLY', 'mentions are for group chats: a direct chat has nobody else to single out', 422),
  clientMessageIdReused: () =>
    new AppError('MSG_CLIENT_MESSAGE_ID_REUSED', 'you already sent another message with this clientMessageId: pick a new one per message', 409),
  /** The event stream's refusals (the push part's, platform/push errors.ts), which the chat list's sync shares. */
  eventsCursorInvalid: StreamErrors.cursorInvalid,
  eventsCursorExpired: StreamErrors.cursorExpired,
  eventsCursorAhead: StreamErrors.cursorAhead,
  /** The chat list's sync token past the stream's head (as eventsCursorAhead). */
  chatSyncTokenAhead: () =>
    new AppError('MSG_CHAT_SYNC_TOKEN_AHEAD', 'after is beyond the newest change: list your chats again without after and keep its next', 400),
  blocked: () => new AppError('MSG_USER_BLOCKED', 'you cannot message or call this user', 403),
  /** MESSENGER_DEFAULTS.sendQueueMaxWaiting sends already wait on this replica: shed load instead of queueing without end. */
  sendQueueFull: () =>
    new AppError('MSG_SEND_QUEUE_FULL', 'too many messages are being sent right now; try again shortly', 503, { retryAfterSeconds: 1 }),
  /** The caller's replica row is not active (seed 002: Blocked, Archived or an unknown status). */
  callerInactive: () => new AppError('MSG_USER_INACTIVE', 'your account is blocked or archived: it cannot send, call or add contacts', 403),
  /**
   * The replica has no row for the token's user: a user just registered (seed 002's consistency
   * window, usually seconds) or one identity never announced. Not "blocked": nothing is wrong with
   * the account the messenger knows of, it knows of none yet.
   */
  callerUnknown: () =>
    new AppError(
      'MSG_USER_NOT_REPLICATED',
      'the messenger does not know your account yet (a newly registered user is known within minutes): try again later',
      403,
    ),
  /** A user named by id (a chat member, a callee) that the replica does not have as active. */
  userNotFound: (userId: string) => new AppError('MSG_USER_NOT_FOUND', `no active messenger user with id ${userId}`, 404),
  /** The other party of a direct chat is not active any more: it cannot be messaged. */
  recipientInactive: () => new AppError('MSG_RECIPIENT_INACTIVE', 'the other participant is no longer active and cannot be messaged', 409),
};

/** The close message a blocked or archived user's hub connections get (no reconnect). */
export const USER_INACTIVE_CLOSE_REASON = 'Forbidden: the user is blocked or archived.';

export const ContactErrors = {
  self: () => new AppError('MSG_CONTACT_SELF', 'you cannot add yourself as a contact', 400),
  exists: () => new AppError('MSG_CONTACT_ALREADY_EXISTS', 'a contact or request with this user already exists', 409),
  notFound: () => new AppError('MSG_CONTACT_NOT_FOUND', 'no such contact or request of yours', 404),
  notAddressee: () => new AppError('MSG_CONTACT_NOT_ADDRESSEE', 'only the addressee may accept a contact request', 403),
  notPending: () => new AppError('MSG_CONTACT_NOT_PENDING', 'the contact request is not pending', 409),
  blockSelf: () => new AppError('MSG_BLACKLIST_SELF', 'you cannot block yourself', 400),
};

export const CallErrors = {
  notFound: () => new AppError('MSG_CALL_NOT_FOUND', 'no such call or conference of yours', 404),
  self: () => new AppError('MSG_CALL_SELF', 'you cannot call yourself', 400),
  wrongState: (status: string, action: string) => new AppError('MSG_CALL_INVALID_STATE', `cannot ${action} a call that is ${status}`, 409),
  notParty: (who: string) => new AppError('MSG_CALL_FORBIDDEN', `only the ${who} may do this`, 403),
  conferenceActive: () => new AppError('MSG_CONFERENCE_ALREADY_ACTIVE', 'the chat already has an active conference', 409),
  notJoined: () => new AppError('MSG_CONFERENCE_NOT_JOINED', 'join the conference first', 409),
  recordingActive: () => new AppError('MSG_RECORDING_ALREADY_ACTIVE', 'the conference is already being recorded', 409),
  recordingNotFound: () => new AppError('MSG_RECORDING_NOT_FOUND', 'no such recording', 404),
  recordingState: (status: string) => new AppError('MSG_RECORDING_INVALID_STATE', `the recording is ${status}`, 409),
};
