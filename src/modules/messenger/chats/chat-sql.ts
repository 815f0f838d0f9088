import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { closeSpansSql, openSpansSql } from '../../../platform/push/index.ts';
import { newId } from '../../../platform/time.ts';
import type { ChatEventKind, ChatKind, NotificationLevel, ParticipantRole } from '../model/chat-kinds.ts';

/**
 * Statements of chats, participants and the chat's system feed. Owner operations run them in a
 * drizzle transaction (so the outbox rows share it).
 */

/** Chats the user is an Active participant of: the chat:{ChatId} groups its hub connections join. */
export async function activeChatIdsOf(db: Db, userId: string): Promise<string[]> {
  const { rows } = await query<{ chatId: string }>(
    db,
    sql`select chat_id as "chatId" from messenger.chat_participants where user_id = ${userId} and status = 'Active'`,
  );
  return rows.map((r) => r.chatId);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * What the hub needs at connect, for many users in one read (the connects of one event-loop turn):
 * the replica's IsActive (undefined: no replica row yet) and the chats each is an Active participant of.
 */
export async function connectStateOf(db: Db, userIds: readonly string[]): Promise<Map<string, { active: boolean | undefined; chatIds: string[] }>> {
  const ids = userIds.filter((u) => UUID.test(u));
  if (ids.length === 0) return new Map();
  const { rows } = await query<{ id: string; active: boolean | null; chatIds: string[] }>(
    db,
    sql`select x.id::text as id, u.is_active as active,
               array(select p.chat_id from messenger.chat_participants p where p.user_id = x.id and p.status = 'Active') as "chatIds"
          from unnest(${sql.param(ids)}::uuid[]) as x(id) left join messenger.users u on u.id = x.id`,
  );
  return new Map(rows.map((r) => [r.id, { active: r.active ?? undefined, chatIds: r.chatIds }]));
}

/**
 * The Active participants of a chat and its membership version, read in one snapshot (membership
 * changes bump the version in the transaction that makes them): what a replica's hub checks a
 * versioned chat:{ChatId} send against. Undefined for an unknown chat.
 */
export async function chatMembership(db: Db, chatId: string): Promise<{ version: number; userIds: string[] } | undefined> {
  const { rows } = await query<{ version: number; userIds: string[] }>(
    db,
    sql`select c.membership_version as version,
               array(select p.user_id from messenger.chat_participants p where p.chat_id = c.id and p.status = 'Active') as "userIds"
          from messenger.chats c where c.id = ${chatId}`,
  );
  return rows[0];
}

export interface ChatRow {
  id: string;
  kind: ChatKind;
  title: string | null;
  createdByUserId: string;
  lastSeq: number;
  createdAt: Date;
  updatedAt: Date;
}

export const CHAT_COLUMNS = sql.raw(`c.id, c.kind, c.title, c.created_by_user_id as "createdByUserId", c.last_seq::float8 as "lastSeq",
  c.created_at as "createdAt", c.updated_at as "updatedAt"`);

/**
 * The chat if `userId` is one of its Active participants (record-level rule), else undefined.
 * `lock` takes the chat row lock that orders Seq hand-out and membership changes of the chat.
 */
export async function chatForParticipant(
  q: Db,
  chatId: string,
  userId: string,
  opts: { lock?: boolean } = {},
): Promise<(ChatRow & { role: ParticipantRole }) | undefined> {
  const { rows } = await query<ChatRow & { role: ParticipantRole }>(
    q,
    sql`select ${CHAT_COLUMNS}, p.role from messenger.chats c
          join messenger.chat_participants p on p.chat_id = c.id and p.user_id = ${userId} and p.status = 'Active'
         where c.id = ${chatId} ${opts.lock ? sql`for update of c` : sql``}`,
  );
  return rows[0];
}

export async function chatByDirectKey(q: Db, directKey: string): Promise<ChatRow | undefined> {
  const { rows } = await query<ChatRow>(q, sql`select ${CHAT_COLUMNS} from messenger.chats c where c.direct_key = ${directKey}`);
  return rows[0];
}

export async function insertChat(
  tx: Db,
  c: { id: string; kind: ChatKind; title: string | null; directKey: string | null; createdByUserId: string; now: Date },
): Promise<boolean> {
  const { rows } = await query<{ id: string }>(
    tx,
    sql`insert into messenger.chats (id, kind, title, direct_key, created_by_user_id, created_at, updated_at)
        values (${c.id}, ${c.kind}, ${c.title}, ${c.directKey}, ${c.createdByUserId}, ${c.now.toISOString()}, ${c.now.toISOString()})
        on conflict (direct_key) do nothing returning id`,
  );
  return rows.length === 1;
}

export interface ParticipantRow {
  id: string;
  userId: string;
  role: ParticipantRole;
  status: 'Active' | 'Removed';
  lastReadSeq: number;
  joinedAt: Date;
  /** Null while the participation is a message request (chats/schema.ts, acceptedAt). */
  acceptedAt: Date | null;
  /** What this participant is notified of in the chat (their own: shown to them alone). */
  notificationLevel: NotificationLevel;
}

export async function participantsOf(q: Db, chatId: string, opts: { activeOnly?: boolean } = {}): Promise<ParticipantRow[]> {
  const { rows } = await query<ParticipantRow>(
    q,
    sql`select id, user_id as "userId", role, status, last_read_seq::float8 as "lastReadSeq", joined_at as "joinedAt",
               accepted_at as "acceptedAt", notification_level as "notificationLevel"
          from messenger.chat_participants where chat_id = ${chatId} ${opts.activeOnly ? sql`and status = 'Active'` : sql``}
         order by joined_at, user_id`,
  );
  return rows;
}

/** The Active participants of every chat given, in one statement: a page of chats reads them at once. */
export async function activeParticipantsOfChats(q: Db, chatIds: readonly string[]): Promise<Map<string, ParticipantRow[]>> {
  const byChat = new Map<string, ParticipantRow[]>(chatIds.map((id) => [id, []]));
  if (chatIds.length === 0) return byChat;
  const { rows } = await query<ParticipantRow & { chatId: string }>(
    q,
    sql`select chat_id as "chatId", id, user_id as "userId", role, status, last_read_seq::float8 as "lastReadSeq", joined_at as "joinedAt",
               accepted_at as "acceptedAt", notification_level as "notificationLevel"
          from messenger.chat_participants where chat_id = any(${sql.param(chatIds)}::uuid[]) and status = 'Active'
         order by joined_at, user_id`,
  );
  for (const { chatId, ...p } of rows) byChat.get(chatId)?.push(p);
  return byChat;
}

/**
 * Users about to join a chat, as `me` may add them, in one statement: those the replica has as
 * active, among them those `me` blocks and those who block `me` (blacklist.md), and those who are
 * `me`'s Accepted contacts (their participation needs no request: docs/security.md, "Consent").
 */
export async function joinCandidates(
  q: Db,
  me: string,
  userIds: readonly string[],
): Promise<{ active: Set<string>; blocked: Set<string>; blockedMe: Set<string>; contacts: Set<string> }> {
  if (userIds.length === 0) return { active: new Set(), blocked: new Set(), blockedMe: new Set(), contacts: new Set() };
  const { rows } = await query<{ id: string; blocked: boolean; blockedMe: boolean; contact: boolean }>(
    q,
    sql`select u.id, exists (
              select 1 from messenger.blacklist_entries b
               where b.status = 'Blocked' and b.owner_user_id = ${me} and b.blocked_user_id = u.id
            ) as blocked,
            exists (
              select 1 from messenger.blacklist_entries b
               where b.status = 'Blocked' and b.owner_user_id = u.id and b.blocked_user_id = ${me}
            ) as "blockedMe",
            exists (
              select 1 from messenger.contacts k
               where k.status = 'Accepted' and least(k.requester_user_id, k.addressee_user_id) = least(${me}::uuid, u.id)
                 and greatest(k.requester_user_id, k.addressee_user_id) = greatest(${me}::uuid, u.id)
            ) as contact
          from messenger.users u where u.id = any(${sql.param(userIds)}::uuid[]) and u.is_active`,
  );
  const ids = (f: (r: (typeof rows)[number]) => boolean) => new Set(rows.filter(f).map((r) => r.id));
  return { active: ids(() => true), blocked: ids((r) => r.blocked), blockedMe: ids((r) => r.blockedMe), contacts: ids((r) => r.contact) };
}

/**
 * Adds the user, or makes a Removed participant Active again, accepted (consented) or as a message
 * request (`accepted` false). Returns the participant id.
 */
export async function upsertActiveParticipant(
  tx: Db,
  p: { chatId: string; userId: string; role: ParticipantRole; now: Date; accepted: boolean },
): Promise<string> {
  const at = p.now.toISOString();
  const { rows } = await query<{ id: string }>(
    tx,
    sql`insert into messenger.chat_participants (id, chat_id, user_id, role, status, joined_at, accepted_at, updated_at)
        values (${newId()}, ${p.chatId}, ${p.userId}, ${p.role}, 'Active', ${at}, ${p.accepted ? at : null}, ${at})
        on conflict (chat_id, user_id) do update
          set status = 'Active', role = excluded.role, removed_at = null, joined_at = excluded.joined_at,
              accepted_at = excluded.accepted_at, updated_at = excluded.updated_at
        returning id`,
  );
  return rows[0]!.id;
}

/**
 * The user accepts the chat (answers its request): true when this changed it, false when it was
 * already accepted or the user is no Active participant.
 */
export async function acceptParticipation(tx: Db, chatId: string, userId: string, now: Date): Promise<boolean> {
  const { rows } = await query<{ id: string }>(
    tx,
    sql`update messenger.chat_participants set accepted_at = ${now.toISOString()}, updated_at = ${now.toISOString()}
         where chat_id = ${chatId} and user_id = ${userId} and status = 'Active' and accepted_at is null returning id`,
  );
  return rows.length === 1;
}

export async function markParticipantRemoved(tx: Db, chatId: string, userId: string, now: Date): Promise<boolean> {
  const { rows } = await query<{ id: string }>(
    tx,
    sql`update messenger.chat_participants set status = 'Removed', removed_at = ${now.toISOString()}, updated_at = ${now.toISOString()}
         where chat_id = ${chatId} and user_id = ${userId} and status = 'Active' returning id`,
  );
  return rows.length === 1;
}

export async function insertChatEvent(
  tx: Db,
  e: { chatId: string; kind: ChatEventKind; actorUserId: string; subjectUserId: string | null; now: Date },
): Promise<string> {
  const id = newId();
  await query(
    tx,
    sql`insert into messenger.chat_events (id, chat_id, kind, actor_user_id, subject_user_id, created_at)
        values (${id}, ${e.chatId}, ${e.kind}, ${e.actorUserId}, ${e.subjectUserId}, ${e.now.toISOString()})`,
  );
  return id;
}

/**
 * Marks the chat changed. A membership change (`joined` or `left` users) bumps membership_version —
 * sends then re-read their recipients — and opens or closes those users' membership spans at the
 * new version, which is what the event stream judges who may read a chat event by.
 */
export async function touchChat(
  tx: Db,
  chatId: string,
  now: Date,
  change: { title?: string; joined?: readonly string[]; left?: readonly string[] } = {},
): Promise<void> {
  const joined = change.joined ?? [];
  const left = change.left ?? [];
  const membership = joined.length > 0 || left.length > 0;
  await query(
    tx,
    sql`with bumped as (
          update messenger.chats set updated_at = ${now.toISOString()}
            ${change.title === undefined ? sql`` : sql`, title = ${change.title}`}
            ${membership ? sql`, membership_version = membership_version + 1` : sql``}
           where id = ${chatId} returning membership_version as v),
        opened as (${openSpansSql(chatId, joined, sql`(select v from bumped)`)})
        ${closeSpansSql(chatId, left, sql`(select v from bumped)`)}`,
  );
}

/** A new chat's members: their spans (push's, read by the event stream) open at the chat's first membership version. */
export async function openMembershipSpans(tx: Db, chatId: string, userIds: readonly string[]): Promise<void> {
  await query(tx, openSpansSql(chatId, userIds, sql`(select c.membership_version from messenger.chats c where c.id = ${chatId})`));
}
