import { errorText } from '../../../platform/errors/index.ts';
import type { Principal } from '../../../platform/http/index.ts';
import { newId } from '../../../platform/time.ts';
import {
  acceptParticipation,
  chatByDirectKey,
  chatForParticipant,
  insertChat,
  insertChatEvent,
  joinCandidates,
  markParticipantRemoved,
  openMembershipSpans,
  participantsOf,
  touchChat,
  upsertActiveParticipant,
  type ChatRow,
  type ParticipantRow,
} from './chat-sql.ts';
import type { Db } from '../../../platform/db/index.ts';
import { blockedWith } from '../model/blacklist-reads.ts';
import type { MessengerContext } from '../context.ts';
import { ChatErrors } from '../errors.ts';
import { chatGroup, type ChatKind, type NotificationLevel } from '../model/chat-kinds.ts';
import { enqueueRealtime, type NewRealtimeRow } from '../model/push-rows.ts';
import { activeUserTransaction, requireActiveCaller } from '../user-replica/replica-reads.ts';

/** Most active participants of a group chat: a product limit clients are built for (once MESSENGER_REALTIME_GROUP_MAX_PARTICIPANTS). */
export const GROUP_MAX_PARTICIPANTS = 500;

/**
 * Chats and their participants (participant.md, chat-event.md): every change writes its chat event
 * and the ChatUpdated push intent in one transaction. Group membership of open hub connections is
 * changed right after the commit, and again by the dispatcher when it delivers the ChatUpdated.
 */

export interface ChatView extends Omit<ChatRow, 'createdAt' | 'updatedAt'> {
  createdAt: string;
  updatedAt: string;
  /** The chat is a message request to the viewer: their own participation is not accepted. */
  isRequest: boolean;
  /** What the viewer is notified of in this chat (PUT …/notifications). */
  notificationLevel: NotificationLevel;
  participants: { userId: string; role: string; lastReadSeq: number; joinedAt: string; accepted: boolean }[];
}

/**
 * The chat as `viewer` sees it. Another participant's read position is shown only while they
 * consent to the viewer (docs/security.md, "Consent"): 0 while their participation is a request
 * or either of the two blocks the other.
 */
export function chatView(c: ChatRow, participants: ParticipantRow[], viewer: { userId: string; blocked: ReadonlySet<string> }): ChatView {
  const shares = (p: ParticipantRow) => p.userId === viewer.userId || (p.acceptedAt !== null && !viewer.blocked.has(p.userId));
  return {
    id: c.id,
    kind: c.kind,
    title: c.title,
    createdByUserId: c.createdByUserId,
    lastSeq: c.lastSeq,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
    isRequest: participants.some((p) => p.userId === viewer.userId && p.acceptedAt === null),
    notificationLevel: participants.find((p) => p.userId === viewer.userId)?.notificationLevel ?? 'all',
    participants: participants.map((p) => ({
      userId: p.userId,
      role: p.role,
      lastReadSeq: shares(p) ? p.lastReadSeq : 0,
      joinedAt: p.joinedAt.toISOString(),
      accepted: p.acceptedAt !== null,
    })),
  };
}

/** The chat as its participant sees it; anyone else gets MSG_CHAT_NOT_FOUND. */
export async function getChat(q: Db, chatId: string, userId: string): Promise<ChatView> {
  const chat = await chatForParticipant(q, chatId, userId);
  if (!chat) throw ChatErrors.chatNotFound();
  const [participants, blocked] = await Promise.all([participantsOf(q, chatId, { activeOnly: true }), blockedWith(q, userId)]);
  return chatView(chat, participants, { userId, blocked });
}

/** One statement for the page's chats and one for all their participants, however long the page. */
/**
 * The users `me` puts into a chat, looked up in one statement: each must be active in the replica
 * (MSG_USER_NOT_FOUND naming the first that is not), and none may be one `me` blocks (MSG_USER_BLOCKED:
 * they know their own block). The blocked are never told: into a group, a user who blocks `me` is
 * refused as one the replica does not hold (MSG_USER_NOT_FOUND); a Direct chat with them is opened
 * as any other, and what `me` writes there is withheld from them (send.ts). A third member may still
 * add both of a blocked pair.
 */
async function requireJoinable(q: Db, me: string, userIds: string[], kind: ChatKind): Promise<{ contacts: Set<string> }> {
  const { active, blocked, blockedMe, contacts } = await joinCandidates(q, me, userIds);
  const missing = userIds.find((u) => !active.has(u) || (kind === 'Group' && blockedMe.has(u)));
  if (missing) throw ChatErrors.userNotFound(missing);
  if (blocked.size > 0) throw ChatErrors.blocked();
  return { contacts };
}

/** Best effort: the dispatcher repeats the change when it delivers the chat's ChatUpdated. */
async function applyGroups(ctx: MessengerContext, op: 'join' | 'leave', userIds: string[], chatId: string): Promise<void> {
  try {
    for (const u of userIds) {
      if (op === 'join') await ctx.hub.addUserToGroup(u, chatGroup(chatId));
      else await ctx.hub.removeUserFromGroup(u, chatGroup(chatId));
    }
  } catch (err) {
    ctx.log.warn({ err: { message: errorText(err, { root: false, name: false }) }, chatId, op }, 'hub group change failed; the realtime dispatcher applies it on delivery');
  }
}

const chatUpdated = (chatId: string, eventId: string): NewRealtimeRow => ({ kind: 'ChatUpdated', targetKind: 'ChatGroup', chatId, refId: eventId });

export interface CreateChatInput {
  kind: ChatKind;
  title?: string;
  memberUserIds: string[];
}

/**
 * Direct: the caller and one other active user, one chat per pair (opening it again returns the
 * existing one: `created` false, and answers its request if it was one to the caller). Group: a
 * title and up to the participant cap; the caller is Owner. Members who are not the caller's
 * Accepted contacts join as a message request (docs/security.md, "Consent").
 */
export async function createChat(ctx: MessengerContext, caller: Principal, input: CreateChatInput): Promise<{ chat: ChatView; created: boolean }> {
  await requireActiveCaller(ctx.db, caller.userId);
  const me = caller.userId;
  const others = [...new Set(input.memberUserIds.map((u) => u.toLowerCase()))].filter((u) => u !== me);
  if (input.kind === 'Direct' && others.length !== 1) throw ChatErrors.invalidChat('a direct chat needs exactly one other user');
  if (input.kind === 'Group' && !input.title?.trim()) throw ChatErrors.invalidChat('a group chat needs a title');
  const max = GROUP_MAX_PARTICIPANTS;
  if (others.length + 1 > max) throw ChatErrors.chatFull(max);
  const { contacts } = await requireJoinable(ctx.db, me, others, input.kind);
  const directKey = input.kind === 'Direct' ? [me, others[0]!].sort().join(':') : null;
  if (directKey) {
    const existing = await chatByDirectKey(ctx.db, directKey);
    if (existing) return { chat: await acceptChat(ctx, caller, existing.id), created: false };
  }
  const now = ctx.clock.now();
  const chatId = newId();
  const created = await activeUserTransaction(ctx.db, me, async (tx) => {
    if (!(await insertChat(tx, { id: chatId, kind: input.kind, title: input.title?.trim() ?? null, directKey, createdByUserId: me, now }))) return false;
    await upsertActiveParticipant(tx, { chatId, userId: me, role: input.kind === 'Group' ? 'Owner' : 'Member', now, accepted: true });
    for (const u of others) await upsertActiveParticipant(tx, { chatId, userId: u, role: 'Member', now, accepted: contacts.has(u) });
    await openMembershipSpans(tx, chatId, [me, ...others]);
    const eventId = await insertChatEvent(tx, { chatId, kind: 'Created', actorUserId: me, subjectUserId: null, now });
    await enqueueRealtime(ctx.push, tx, [chatUpdated(chatId, eventId)], now);
    return true;
  });
  if (!created) return { chat: await acceptChat(ctx, caller, (await chatByDirectKey(ctx.db, directKey!))!.id), created: false };
  await applyGroups(ctx, 'join', [me, ...others], chatId);
  return { chat: await getChat(ctx.db, chatId, me), created: true };
}

/**
 * The caller answers the chat's request (or opens a Direct chat again): from now on the chat's
 * other members get the caller's presence, typing and read position. Announced to the chat as a
 * ChatUpdated (RequestAccepted); accepting an accepted chat changes and announces nothing.
 */
export async function acceptChat(ctx: MessengerContext, caller: Principal, chatId: string): Promise<ChatView> {
  const now = ctx.clock.now();
  await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const chat = await chatForParticipant(tx, chatId, caller.userId, { lock: true });
    if (!chat) throw ChatErrors.chatNotFound();
    if (!(await acceptParticipation(tx, chatId, caller.userId, now))) return;
    await touchChat(tx, chatId, now);
    const eventId = await insertChatEvent(tx, { chatId, kind: 'RequestAccepted', actorUserId: caller.userId, subjectUserId: caller.userId, now });
    await enqueueRealtime(ctx.push, tx, [chatUpdated(chatId, eventId)], now);
  });
  return getChat(ctx.db, chatId, caller.userId);
}

/** Owner or admin; group chats only. */
function requireManager(chat: ChatRow & { role: string }, caller: Principal): void {
  if (chat.kind === 'Direct') throw ChatErrors.directChatFixed();
  if (chat.role !== 'Owner' && !caller.admin) throw ChatErrors.notChatOwner();
}

export async function renameChat(ctx: MessengerContext, caller: Principal, chatId: string, title: string): Promise<ChatView> {
  const clean = title.trim();
  if (!clean) throw ChatErrors.invalidChat('a group chat needs a title');
  const now = ctx.clock.now();
  await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const chat = await chatForParticipant(tx, chatId, caller.userId, { lock: true });
    if (!chat) throw ChatErrors.chatNotFound();
    requireManager(chat, caller);
    await touchChat(tx, chatId, now, { title: clean });
    const eventId = await insertChatEvent(tx, { chatId, kind: 'Renamed', actorUserId: caller.userId, subjectUserId: null, now });
    await enqueueRealtime(ctx.push, tx, [chatUpdated(chatId, eventId)], now);
  });
  return getChat(ctx.db, chatId, caller.userId);
}

/** Added participants see the chat at once: their open connections join chat:{ChatId} (UC-MSG-008). */
export async function addParticipants(ctx: MessengerContext, caller: Principal, chatId: string, userIds: string[]): Promise<ChatView> {
  await requireActiveCaller(ctx.db, caller.userId);
  const wanted = [...new Set(userIds.map((u) => u.toLowerCase()))];
  const now = ctx.clock.now();
  const added = await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const chat = await chatForParticipant(tx, chatId, caller.userId, { lock: true });
    if (!chat) throw ChatErrors.chatNotFound();
    requireManager(chat, caller);
    const active = new Set((await participantsOf(tx, chatId, { activeOnly: true })).map((p) => p.userId));
    const fresh = wanted.filter((u) => !active.has(u));
    // Only once the caller is known to manage the chat: a stranger cannot make it look anyone up.
    const { contacts } = await requireJoinable(tx, caller.userId, fresh, 'Group');
    const max = GROUP_MAX_PARTICIPANTS;
    if (active.size + fresh.length > max) throw ChatErrors.chatFull(max);
    const rows: NewRealtimeRow[] = [];
    for (const u of fresh) {
      await upsertActiveParticipant(tx, { chatId, userId: u, role: 'Member', now, accepted: contacts.has(u) });
      rows.push(chatUpdated(chatId, await insertChatEvent(tx, { chatId, kind: 'ParticipantAdded', actorUserId: caller.userId, subjectUserId: u, now })));
    }
    if (fresh.length > 0) {
      await touchChat(tx, chatId, now, { joined: fresh });
      await enqueueRealtime(ctx.push, tx, rows, now);
    }
    return fresh;
  });
  await applyGroups(ctx, 'join', added, chatId);
  return getChat(ctx.db, chatId, caller.userId);
}

/**
 * Removes a participant (owner or admin), or the caller itself (leaving). Its open connections leave
 * chat:{ChatId} right after the commit and receive nothing more from the chat; it is told through
 * its own user:{UserId} group.
 */
export async function removeParticipant(ctx: MessengerContext, caller: Principal, chatId: string, userId: string): Promise<void> {
  const subject = userId.toLowerCase();
  const now = ctx.clock.now();
  await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const chat = await chatForParticipant(tx, chatId, caller.userId, { lock: true });
    if (!chat) throw ChatErrors.chatNotFound();
    if (chat.kind === 'Direct') throw ChatErrors.directChatFixed();
    if (subject !== caller.userId) requireManager(chat, caller);
    const target = (await participantsOf(tx, chatId, { activeOnly: true })).find((p) => p.userId === subject);
    if (!target) throw ChatErrors.participantNotFound();
    if (target.role === 'Owner') throw ChatErrors.ownerCannotLeave();
    await markParticipantRemoved(tx, chatId, subject, now);
    await touchChat(tx, chatId, now, { left: [subject] });
    const eventId = await insertChatEvent(tx, { chatId, kind: 'ParticipantRemoved', actorUserId: caller.userId, subjectUserId: subject, now });
    await enqueueRealtime(ctx.push, tx, [chatUpdated(chatId, eventId), { kind: 'ChatUpdated', targetKind: 'User', targetUserId: subject, chatId, refId: eventId }], now);
  });
  await applyGroups(ctx, 'leave', [subject], chatId);
}
