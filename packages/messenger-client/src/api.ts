import type { ChatListPage, UserPresence } from './presence.ts';
import { PRESENCE_BATCH } from './presence.ts';
import { MessengerError } from './errors.ts';
import { FilesApi } from './files.ts';
import type { Rest } from './rest.ts';
import { toChatMessage, type ChatMessage, type Reaction, type Wire } from './wire.ts';

/**
 * The REST calls a chat app makes besides sending (send() goes through the offline queue): chats,
 * message requests, group members, history both ways, edits, deletions, read marks, presence, the
 * chat list, message search (and, from FilesApi and PeopleApi, files, contacts, blocking and push tokens). Each resolves with the
 * service's answer in the client's shapes or rejects with a MessengerError.
 */

export interface ChatParticipant {
  userId: string;
  role: string;
  /** Their read position (0 while they have not accepted the chat, or either of you blocks the other). */
  lastReadSeq: number;
  joinedAt: string;
  /** false: the chat is a message request to them until they accept it or write in it. */
  accepted: boolean;
}

export interface Chat {
  id: string;
  kind: 'Direct' | 'Group';
  title: string | null;
  createdByUserId: string;
  lastSeq: number;
  createdAt: string;
  updatedAt: string;
  /** The chat is a message request to this user (from someone not their Accepted contact): acceptChat or declineChat. */
  isRequest: boolean;
  /** What this user is notified of in the chat (setChatNotifications). */
  notificationLevel: NotificationLevel;
  participants: ChatParticipant[];
}

/** Notifications of a chat: every message, only those that mention the user, or none. */
export type NotificationLevel = 'all' | 'mentions' | 'off';

export interface NewChat {
  kind: 'Direct' | 'Group';
  /** Groups: 1–200 characters. */
  title?: string;
  /** The other participants (Direct: exactly one). */
  memberUserIds: string[];
}

/** One page of history, in ascending Seq order, and the chat's current last Seq. */
export interface HistoryPage {
  items: ChatMessage[];
  lastSeq: number;
  /** More messages lie beyond this page in the direction asked (older for beforeSeq, newer for afterSeq). */
  hasMore: boolean;
}

/** What declineChat did: left the group, or blocked the Direct chat's other member. */
export type Declined = { left: true; blockedUserId?: never } | { blockedUserId: string; left?: never };

/** Which page: `afterSeq` pages forward (newer), `beforeSeq` back (the newest page below it). Not both. */
export type HistoryQuery = { afterSeq?: number; beforeSeq?: never; limit?: number } | { beforeSeq: number; afterSeq?: never; limit?: number };

export interface MessageEdit {
  body?: string;
  cardText?: string;
}

/** One piece of a search hit's highlighted fragment: render the `match` pieces emphasised (no markup to parse). */
export interface HighlightPiece {
  text: string;
  match: boolean;
}

export interface SearchHit {
  message: ChatMessage;
  /** Relevance (higher is better): hits come by it, then newest first. */
  rank: number;
  /** The matched fragment(s) of the text, in pieces, " … " between fragments. */
  highlight: HighlightPiece[];
}

export interface SearchPage {
  items: SearchHit[];
  /** Pass as `cursor` for the next page; null on the last one. */
  nextCursor: string | null;
}

export interface SearchQuery {
  /** Search this chat only (one the user is not an active member of: MSG_CHAT_NOT_FOUND); absent: all their chats. */
  chatId?: string;
  /** Hits per page, 1–50 (the service's default: 20). */
  limit?: number;
  /** The previous page's nextCursor (one the service did not give: 400 MSG_SEARCH_CURSOR_INVALID). */
  cursor?: string;
}

const chatPath = (chatId: string) => `/api/messenger/chats/${encodeURIComponent(chatId)}`;
const reactionPath = (chatId: string, messageId: string, emoji: string) =>
  `${chatPath(chatId)}/messages/${encodeURIComponent(messageId)}/reactions/${encodeURIComponent(emoji)}`;

export class MessengerApi extends FilesApi {
  /** The signed-in user's id (the token's `sub`). */
  protected readonly me: () => Promise<string>;

  constructor(rest: Rest, me: () => Promise<string>) {
    super(rest);
    this.me = me;
  }

  /** Creates a group chat, or opens the Direct chat with one user (the existing one when the pair has one). */
  async createChat(chat: NewChat): Promise<Chat> {
    return this.rest.json<Chat>('POST', '/api/messenger/chats', chat);
  }

  /** Accepts a chat that is a message request to the user (a chat from a non-contact): then its members see their presence, typing and read position. */
  async acceptChat(chatId: string): Promise<Chat> {
    return this.rest.json<Chat>('POST', `${chatPath(chatId)}/accept`);
  }

  /**
   * Declines a message request the way the service defines it (docs/security.md, "Consent"): leaves
   * a group; blocks the other member of a Direct chat (who is never told). An unanswered request
   * shares nothing either, so declining is optional.
   */
  async declineChat(chatId: string): Promise<Declined> {
    const chat = await this.getChat(chatId);
    const me = await this.me();
    if (chat.kind === 'Group') {
      await this.removeMember(chatId, me);
      return { left: true };
    }
    const other = chat.participants.find((p) => p.userId !== me);
    if (!other) throw new MessengerError('MSG_CHAT_NOT_FOUND', 'the Direct chat has no other member', 404);
    await this.blockUser(other.userId);
    return { blockedUserId: other.userId };
  }

  /**
   * Sets what the user is notified of in this chat: every message ('all', the default), only messages
   * that mention them ('mentions'), or nothing ('off'). Their chat views show it as notificationLevel.
   */
  async setChatNotifications(chatId: string, level: NotificationLevel): Promise<Chat> {
    return this.rest.json<Chat>('PUT', `${chatPath(chatId)}/notifications`, { level });
  }

  /** Renames a group (its owner or an admin); members get chat_updated Renamed. */
  async renameChat(chatId: string, title: string): Promise<Chat> {
    return this.rest.json<Chat>('PATCH', chatPath(chatId), { title });
  }

  /** Adds members to a group (its owner or an admin); those not the adder's Accepted contacts get it as a message request. */
  async addMembers(chatId: string, userIds: readonly string[]): Promise<Chat> {
    return this.rest.json<Chat>('POST', `${chatPath(chatId)}/participants`, { userIds });
  }

  /** Removes a member from a group (its owner or an admin), or this user (leaving: leaveChat). */
  async removeMember(chatId: string, userId: string): Promise<void> {
    await this.rest.json<void>('DELETE', `${chatPath(chatId)}/participants/${encodeURIComponent(userId)}`);
  }

  /** Leaves a group (its owner cannot: MSG_CHAT_OWNER_CANNOT_LEAVE; a Direct chat cannot be left: MSG_CHAT_DIRECT_MEMBERS_FIXED). */
  async leaveChat(chatId: string): Promise<void> {
    await this.removeMember(chatId, await this.me());
  }

  async getChat(chatId: string): Promise<Chat> {
    return this.rest.json<Chat>('GET', chatPath(chatId));
  }

  /** A page of a chat's messages, ascending; deleted ones as tombstones (`deleted`, no content). */
  async history(chatId: string, query: HistoryQuery = {}): Promise<HistoryPage> {
    const params = new URLSearchParams();
    if (query.afterSeq !== undefined) params.set('afterSeq', String(query.afterSeq));
    if (query.beforeSeq !== undefined) params.set('beforeSeq', String(query.beforeSeq));
    params.set('limit', String(query.limit ?? 50));
    const page = await this.rest.json<{ items: Wire[]; lastSeq: number; hasMore: boolean }>('GET', `${chatPath(chatId)}/messages?${params}`);
    return { items: page.items.map(toChatMessage), lastSeq: page.lastSeq, hasMore: page.hasMore };
  }

  /**
   * Full-text search over the user's messages (words in any form, "a phrase", or, -word), best
   * first; only messages sent since they joined each chat, none deleted or withheld from them.
   */
  async searchMessages(q: string, query: SearchQuery = {}): Promise<SearchPage> {
    const params = new URLSearchParams({ q });
    if (query.chatId !== undefined) params.set('chatId', query.chatId);
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    if (query.cursor !== undefined) params.set('cursor', query.cursor);
    const page = await this.rest.json<{ items: (Omit<SearchHit, 'message'> & { message: Wire })[]; nextCursor: string | null }>('GET', `/api/messenger/messages/search?${params}`);
    return { items: page.items.map((h) => ({ ...h, message: toChatMessage(h.message) })), nextCursor: page.nextCursor };
  }

  /** Edits your Text body or Card text (within the server's edit window, else MSG_MESSAGE_EDIT_WINDOW_EXPIRED). */
  async editMessage(chatId: string, messageId: string, edit: MessageEdit): Promise<ChatMessage> {
    return toChatMessage(await this.rest.json<Wire>('PATCH', `${chatPath(chatId)}/messages/${encodeURIComponent(messageId)}`, edit));
  }

  /** Deletes your message: its Seq stays as a tombstone. Deleting twice changes nothing. */
  async deleteMessage(chatId: string, messageId: string): Promise<void> {
    await this.rest.json<void>('DELETE', `${chatPath(chatId)}/messages/${encodeURIComponent(messageId)}`);
  }

  /**
   * Reacts to a message with one emoji (👍, ❤️, 👍🏽…; anything else → MSG_REACTION_INVALID). Idempotent;
   * at most 20 different ones of yours per message (MSG_REACTION_LIMIT_REACHED). Answers the message's
   * reactions as you now see them; the other members get `reaction_changed`.
   */
  async react(chatId: string, messageId: string, emoji: string): Promise<Reaction[]> {
    return (await this.rest.json<{ reactions: Reaction[] }>('PUT', reactionPath(chatId, messageId, emoji))).reactions;
  }

  /** Takes back your reaction with this emoji (idempotent); answers the message's reactions as you now see them. */
  async unreact(chatId: string, messageId: string, emoji: string): Promise<Reaction[]> {
    return (await this.rest.json<{ reactions: Reaction[] }>('DELETE', reactionPath(chatId, messageId, emoji))).reactions;
  }

  /** Marks a chat read up to `seq` (read receipts go to the other participants); answers the stored last read Seq. */
  async markRead(chatId: string, seq: number): Promise<number> {
    return (await this.rest.json<{ lastReadSeq: number }>('POST', `${chatPath(chatId)}/read`, { seq })).lastReadSeq;
  }

  /** Online and last seen of contacts and Direct-chat peers (anyone else: online null), any number of ids. */
  async presence(userIds: readonly string[]): Promise<UserPresence[]> {
    const out: UserPresence[] = [];
    for (let i = 0; i < userIds.length; i += PRESENCE_BATCH) {
      const ids = userIds.slice(i, i + PRESENCE_BATCH).join(',');
      out.push(...(await this.rest.json<{ users: UserPresence[] }>('GET', `/api/messenger/presence?userIds=${encodeURIComponent(ids)}`)).users);
    }
    return out;
  }

  /**
   * The chat list with unread counts and last messages: without a token every chat (most recently
   * active first), with one only the chats changed since and the ids of those left; keep `next`.
   */
  async chatList(after?: string, limit = 50): Promise<ChatListPage> {
    const query = `limit=${limit}${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`;
    return this.rest.json<ChatListPage>('GET', `/api/messenger/chats?${query}`);
  }
}
