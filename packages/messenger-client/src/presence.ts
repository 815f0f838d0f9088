/**
 * Presence, typing and the chat list over REST and the hub: thin calls with the shapes the service
 * answers, kept apart from the connection logic in messenger-client.ts.
 */

/** A user's presence as GET /api/messenger/presence answers it; online null: not someone you may see. */
export interface UserPresence {
  userId: string;
  online: boolean | null;
  lastSeenAt: string | null;
}

/** The service answers at most this many ids per presence call. */
export const PRESENCE_BATCH = 100;

/**
 * The server drops Typing calls of one connection for one chat closer together than its throttle
 * (3 s); the client skips them itself so a UI may call typing() on every keystroke.
 */
export const TYPING_INTERVAL_MS = 3000;

/** One chat of the chat list (GET /api/messenger/chats): the chat view with its unread count. */
export interface ListedChat {
  id: string;
  kind: 'Direct' | 'Group';
  title: string | null;
  /** The chat is a message request to this user: acceptChat or declineChat. */
  isRequest: boolean;
  /** Others' messages after your last read Seq, deleted ones excluded. */
  unreadCount: number;
  /** The chat's last message, null for a chat without messages. */
  lastMessage: LastMessagePreview | null;
  [field: string]: unknown;
}

/** What the chat list shows of a chat's last message. */
export interface LastMessagePreview {
  id: string;
  seq: number;
  senderUserId: string;
  kind: 'Text' | 'File' | 'Card';
  /** At most 100 characters of a Text body; null for a file, a card, or a deleted message. */
  preview: string | null;
  /** Deleted: show it as deleted (it has no preview). */
  deleted: boolean;
  sentAt: string;
}

export interface ChatListPage {
  items: ListedChat[];
  /** With a sync token: chats you left or were removed from since it (drop them). */
  removed: string[];
  /** The sync token: pass it to chatList() to get only what changed since this answer. */
  next: string;
}

/** Remembers when typing() last went out per chat. */
export class TypingGate {
  private readonly last = new Map<string, number>();
  /** True when a Typing call for the chat is due now (and records it). */
  due(chatId: string, now = Date.now()): boolean {
    const at = this.last.get(chatId);
    if (at !== undefined && now - at < TYPING_INTERVAL_MS) return false;
    this.last.set(chatId, now);
    return true;
  }
  /** After a reconnect the server's throttle starts over with the new connection. */
  reset(): void {
    this.last.clear();
  }
}
