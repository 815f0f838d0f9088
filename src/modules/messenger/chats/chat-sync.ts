import type { Db } from '../../../platform/db/index.ts';
import { blockedWith } from '../model/blacklist-reads.ts';
import { ChatErrors } from '../errors.ts';
import { changedGroups, cursorOf, positionOf, readStreamHead } from '../../../platform/push/index.ts';
import { activeParticipantsOfChats } from './chat-sql.ts';
import { chatsOfUser, chatsOfUserByIds, type ListedChatRow } from './chat-list-sql.ts';
import { chatView, type ChatView } from './chats.ts';

/**
 * The chat list and its sync: a client lists its chats once (with a sync token), then asks for
 * what changed since the token — new messages, renames, membership, read marks — and gets those
 * chats again, and the ids of chats it left or was removed from. The token is an event-stream
 * cursor: a chat changed when an event of it was pushed to the caller, so the token follows
 * commit order as the stream does.
 */

export type ListedChat = ChatView & {
  unreadCount: number;
  lastMessage: { id: string; seq: number; senderUserId: string; kind: string; preview: string | null; deleted: boolean; sentAt: string } | null;
};

export interface ChatPage {
  items: ListedChat[];
  /** Chats the caller is no longer an Active participant of (left or removed since the token). */
  removed: string[];
  next: string;
}

async function listed(q: Db, userId: string, chats: ListedChatRow[]): Promise<ListedChat[]> {
  const [participants, blocked] = await Promise.all([activeParticipantsOfChats(q, chats.map((c) => c.id)), blockedWith(q, userId)]);
  return chats.map((c) => ({
    ...chatView(c, participants.get(c.id) ?? [], { userId, blocked }),
    unreadCount: c.unreadCount,
    lastMessage: c.lastMessage && { ...c.lastMessage, sentAt: c.lastMessage.sentAt.toISOString() },
  }));
}

/** GET /api/messenger/chats: the list (most recently active first) with a sync token, or what changed since one. */
export async function chatPage(q: Db, userId: string, opts: { after?: string; limit: number }): Promise<ChatPage> {
  if (opts.after === undefined) {
    // The head first: a change committed while the list is read is after it, so the next sync has it.
    const head = await readStreamHead(q, userId);
    return { items: await listed(q, userId, await chatsOfUser(q, userId, opts.limit)), removed: [], next: cursorOf(head) };
  }
  const after = positionOf(opts.after);
  if (after === undefined) throw ChatErrors.eventsCursorInvalid();
  const { groups: chats, head, trimmedBelow } = await changedGroups(q, userId, after, opts.limit);
  // Changes after the token were trimmed by retention: the client lists its chats again.
  if (after < trimmedBelow - 1) throw ChatErrors.eventsCursorExpired();
  // Past the head (read in the same snapshot): not a token this list handed out; changes would be skipped silently.
  if (after > head) throw ChatErrors.chatSyncTokenAhead();
  const rows = await chatsOfUserByIds(q, userId, chats.map((c) => c.chatId));
  const current = new Set(rows.map((r) => r.id));
  const order = new Map(chats.map((c, i) => [c.chatId, i]));
  rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  const last = chats.at(-1);
  return {
    items: await listed(q, userId, rows),
    removed: chats.filter((c) => !current.has(c.chatId)).map((c) => c.chatId),
    next: cursorOf(chats.length >= opts.limit && last ? last.position : head),
  };
}
