import type { MessengerEventName } from './events.ts';

/** The wire shapes of messages and events, and the conversion of a pushed or listed message. */

/** A File message's file as the service stored it: fetch its bytes with fileDownload(chatId, fileId). */
export interface FileMeta {
  fileId: string;
  fileName: string;
  contentType: string;
  size: number;
}

/** One emoji's reactions on a message as you see them. */
export interface Reaction {
  emoji: string;
  /** Yours, and the other members' shared with the chat. */
  count: number;
  /** You reacted with it. */
  mine: boolean;
}

export interface ChatMessage {
  chatId: string;
  messageId: string;
  seq: number;
  senderUserId: string;
  kind: string;
  body?: string | null;
  /** A File message's file (null for other kinds and deleted messages). */
  fileMeta?: FileMeta | null;
  cardText?: string | null;
  sentAt: string;
  editedAt: string | null;
  deleted: boolean;
  /** The id the sender's client picked (a send of this client: match it to the pending copy), or null. */
  clientMessageId: string | null;
  /**
   * The reactions as you see them, most first: on messages the service answers (history, search, an
   * edit). Absent on pushed ones — a new message has none, an edit does not restate them; follow
   * `reaction_changed` for changes.
   */
  reactions?: Reaction[];
  /** The message this one replies to, as it is now (deleted: no excerpt), or null. */
  replyTo: ReplyPreview | null;
  /** The members it mentions (group chats). */
  mentionedUserIds: string[];
}

/** A reply's parent: `excerpt` is the first 100 characters of its text or card, a file's name; null when deleted or withheld. */
export interface ReplyPreview {
  messageId: string;
  seq: number;
  senderUserId: string;
  kind: string;
  excerpt: string | null;
  deleted: boolean;
}

/**
 * The message as onSent hands it over: the same ChatMessage as onMessage, plus `id`, the name the
 * stored message had in onSent before 0.2.0.
 */
export type SentMessage = ChatMessage & {
  /** @deprecated Use `messageId` (the same value); `id` goes away in the next release. */
  id: string;
};

/** Hub events the client forwards to onEvent (the message ones it handles itself). */
export const MESSENGER_EVENTS: MessengerEventName[] = [
  'read_receipt_updated', 'reaction_changed', 'chat_updated', 'contact_request_received', 'contact_request_accepted', 'contact_removed', 'blacklist_changed',
  'notification_level_changed',
  'call_invited', 'call_answered', 'call_declined', 'call_missed', 'call_cancelled', 'call_ended', 'conference_invited', 'conference_started',
  'conference_ended', 'conference_participant_joined', 'conference_participant_left', 'recording_started', 'recording_stopped',
  'recording_available', 'recording_failed', 'screen_share_started', 'screen_share_stopped', 'presence_changed', 'typing',
  'notification_status_changed', 'notification_created',
];

export type Wire = Record<string, unknown>;
export const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** A pushed (PascalCase) or listed (camelCase) message in one shape. */
export function toChatMessage(w: Wire): ChatMessage {
  const pick = (pascal: string) => (pascal in w ? w[pascal] : w[pascal[0]!.toLowerCase() + pascal.slice(1)]);
  return {
    chatId: String(pick('ChatId')),
    messageId: String(pick('MessageId') ?? w.id),
    seq: Number(pick('Seq')),
    senderUserId: String(pick('SenderUserId')),
    kind: String(pick('Kind')),
    body: str(pick('Body')),
    fileMeta: (pick('FileMeta') as FileMeta | undefined) ?? null,
    cardText: str(pick('CardText')),
    sentAt: String(pick('SentAt')),
    editedAt: str(pick('EditedAt')),
    deleted: pick('Deleted') === true,
    clientMessageId: str(pick('ClientMessageId')),
    ...(Array.isArray(w.reactions) ? { reactions: w.reactions as Reaction[] } : {}),
    replyTo: replyPreviewOf(pick('ReplyTo')),
    mentionedUserIds: Array.isArray(pick('MentionedUserIds')) ? (pick('MentionedUserIds') as unknown[]).map(String) : [],
  };
}

/** A pushed (PascalCase) or listed (camelCase) reply preview in one shape; null when there is none. */
function replyPreviewOf(v: unknown): ReplyPreview | null {
  if (v === null || typeof v !== 'object') return null;
  const w = v as Wire;
  const pick = (pascal: string) => (pascal in w ? w[pascal] : w[pascal[0]!.toLowerCase() + pascal.slice(1)]);
  return {
    messageId: String(pick('MessageId')),
    seq: Number(pick('Seq')),
    senderUserId: String(pick('SenderUserId')),
    kind: String(pick('Kind')),
    excerpt: str(pick('Excerpt')),
    deleted: pick('Deleted') === true,
  };
}


/**
 * A UUID v4 for a send. Browsers offer crypto.randomUUID only on secure origins (https, localhost);
 * getRandomValues is everywhere, so an app served over plain http can still send.
 */
export function newClientMessageId(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
