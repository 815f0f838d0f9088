import { sql } from 'drizzle-orm';
import type { Principal } from '../../../platform/http/index.ts';
import { query, type Db } from '../../../platform/db/index.ts';
import { newId } from '../../../platform/time.ts';
import { joinView, type JoinView } from './calls.ts';
import { chatForParticipant, participantsOf } from '../chats/chat-sql.ts';
import { isoOf } from '../sql-rows.ts';
import type { CallsContext } from './media-join.ts';
import { CallErrors, ChatErrors } from '../errors.ts';
import { activeUserTransaction, inactiveAmong, requireActiveCaller } from '../user-replica/replica-reads.ts';
import { blocksAmong } from '../model/blacklist-reads.ts';
import type { MediaKind, RosterStatus } from '../model/call-kinds.ts';
import { enqueueRealtime, type NewRealtimeRow } from '../model/push-rows.ts';
import { ringConsent } from './ring-consent.ts';
import { conferenceFrames } from './conference-audience.ts';

/**
 * Conferences in a chat (conference-session.md, call-participant.md, UC-MSG-006; SessionKind
 * Conference): one live conference per chat, seen by the chat's Active participants only. Roster
 * and state changes go to chat:{ChatId}; invitations to each invitee's user:{UserId}. Join models
 * are minted per recipient at delivery (ConferenceStarted, ConferenceInvited) or per REST answer.
 */

export interface ConferenceRow {
  id: string;
  chatId: string;
  initiatorUserId: string;
  media: MediaKind;
  status: 'Active' | 'Ended';
  roomName: string;
  createdAt: Date;
  endedAt: Date | null;
}

export interface RosterEntry {
  id: string;
  userId: string;
  status: RosterStatus;
  screenSharing: boolean;
}

export interface ConferenceView {
  id: string;
  chatId: string;
  startedByUserId: string;
  media: MediaKind;
  status: 'Active' | 'Ended';
  roomName: string;
  createdAt: string;
  endedAt: string | null;
  participants: { userId: string; status: RosterStatus; screenSharing: boolean }[];
}

const COLUMNS = sql.raw(`id, chat_id as "chatId", initiator_user_id as "initiatorUserId", media, status, room_name as "roomName",
  created_at as "createdAt", ended_at as "endedAt"`);

export async function rosterOf(q: Db, sessionId: string): Promise<RosterEntry[]> {
  return (await query<RosterEntry>(
    q,
    sql`select id, user_id as "userId", status, screen_sharing as "screenSharing" from messenger.media_session_participants
         where session_id = ${sessionId} order by user_id`,
  )).rows;
}

async function view(q: Db, c: ConferenceRow): Promise<ConferenceView> {
  return {
    id: c.id,
    chatId: c.chatId,
    startedByUserId: c.initiatorUserId,
    media: c.media,
    status: c.status,
    roomName: c.roomName,
    createdAt: isoOf(c.createdAt)!,
    endedAt: isoOf(c.endedAt),
    participants: (await rosterOf(q, c.id)).map((r) => ({ userId: r.userId, status: r.status, screenSharing: r.screenSharing })),
  };
}

/** The conference when the user is an Active participant of its chat (record-level), optionally locked. */
export async function conferenceFor(q: Db, conferenceId: string, userId: string, lock = false): Promise<ConferenceRow & { chatRole: string }> {
  const { rows: [c] } = await query<ConferenceRow & { chatRole: string }>(
    q,
    sql`select s.id, s.chat_id as "chatId", s.initiator_user_id as "initiatorUserId", s.media, s.status, s.room_name as "roomName",
               s.created_at as "createdAt", s.ended_at as "endedAt", p.role as "chatRole"
          from messenger.media_sessions s
          join messenger.chat_participants p on p.chat_id = s.chat_id and p.user_id = ${userId} and p.status = 'Active'
         where s.id = ${conferenceId} and s.session_kind = 'Conference' ${lock ? sql`for update of s` : sql``}`,
  );
  if (!c) throw CallErrors.notFound();
  return c;
}

export async function getConference(q: Db, conferenceId: string, userId: string): Promise<ConferenceView> {
  return view(q, await conferenceFor(q, conferenceId, userId));
}

/** Joined → the roster row; anything else refused. */
export async function requireJoined(tx: Db, sessionId: string, userId: string): Promise<RosterEntry> {
  const entry = (await rosterOf(tx, sessionId)).find((r) => r.userId === userId && r.status === 'Joined');
  if (!entry) throw CallErrors.notJoined();
  return entry;
}

async function setRoster(tx: Db, sessionId: string, userId: string, status: RosterStatus, now: Date): Promise<string> {
  const at = now.toISOString();
  const [row] = (await query<{ id: string }>(
    tx,
    sql`insert into messenger.media_session_participants (id, session_id, user_id, status, invited_at, joined_at, left_at, updated_at)
        values (${newId()}, ${sessionId}, ${userId}, ${status}, ${status === 'Invited' ? at : null}::timestamptz,
                ${status === 'Joined' ? at : null}::timestamptz, ${status === 'Left' ? at : null}::timestamptz, ${at})
        on conflict (session_id, user_id) do update
          set status = excluded.status, updated_at = excluded.updated_at,
              invited_at = coalesce(excluded.invited_at, messenger.media_session_participants.invited_at),
              joined_at = coalesce(excluded.joined_at, messenger.media_session_participants.joined_at),
              left_at = coalesce(excluded.left_at, messenger.media_session_participants.left_at),
              screen_sharing = messenger.media_session_participants.screen_sharing and excluded.status = 'Joined'
        returning id`,
  )).rows as [{ id: string }];
  return row.id;
}

export async function startConference(ctx: CallsContext, caller: Principal, chatId: string, media: MediaKind): Promise<{ conference: ConferenceView; join: JoinView }> {
  await requireActiveCaller(ctx.db, caller.userId);
  const me = caller.userId;
  const now = ctx.clock.now();
  const id = newId();
  const roomName = `conf-${id}`;
  await activeUserTransaction(ctx.db, me, async (tx) => {
    const chat = await chatForParticipant(tx, chatId, me, { lock: true });
    if (!chat) throw CallErrors.notFound();
    await refuseBlockingStarter(tx, chat, me);
    const { rows: inserted } = await query<{ id: string }>(
      tx,
      sql`insert into messenger.media_sessions (id, session_kind, chat_id, initiator_user_id, media, status, room_name, created_at, updated_at)
          values (${id}, 'Conference', ${chatId}, ${me}, ${media}, 'Active', ${roomName}, ${now.toISOString()}, ${now.toISOString()})
          on conflict (chat_id) where session_kind = 'Conference' and status = 'Active' do nothing returning id`,
    );
    if (inserted.length === 0) throw CallErrors.conferenceActive();
    await setRoster(tx, id, me, 'Joined', now);
    const conf = { id, chatId, initiatorUserId: me };
    await enqueueRealtime(ctx.push, tx, await conferenceFrames(tx, conf, [['ConferenceStarted', id]]), now);
  });
  const conference = await getConference(ctx.db, id, me);
  return { conference, join: joinView(await ctx.mintJoin({ userId: me, sessionId: id, roomName })) };
}

/**
 * A conference's frames, its start first, reach whom the 1:1 call's ring consent allows in a Direct
 * chat (conference-audience.ts); a starter who blocks the other member is refused, as their call and
 * their message there are (403 MSG_USER_BLOCKED).
 */
async function refuseBlockingStarter(tx: Db, chat: { id: string; kind: string }, me: string): Promise<void> {
  if (chat.kind !== 'Direct') return;
  const other = (await participantsOf(tx, chat.id, { activeOnly: true })).find((p) => p.userId !== me)?.userId;
  if (other !== undefined && (await ringConsent(tx, me, other)) === 'blockedByCaller') throw ChatErrors.blocked();
}

/** Rings chat participants (each gets a personal join model with its conference_invited). */
export async function inviteToConference(ctx: CallsContext, caller: Principal, conferenceId: string, userIds: string[]): Promise<ConferenceView> {
  await requireActiveCaller(ctx.db, caller.userId);
  const now = ctx.clock.now();
  await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const c = await conferenceFor(tx, conferenceId, caller.userId, true);
    if (c.status !== 'Active') throw CallErrors.wrongState(c.status, 'invite to');
    await requireJoined(tx, c.id, caller.userId);
    const members = new Set((await participantsOf(tx, c.chatId, { activeOnly: true })).map((p) => p.userId));
    const roster = new Map((await rosterOf(tx, c.id)).map((r) => [r.userId, r.status]));
    const wanted = [...new Set(userIds.map((u) => u.toLowerCase()))].filter((u) => members.has(u) && roster.get(u) !== 'Joined');
    // A blocked or archived member could neither join nor get a join token: they are not rung.
    const inactive = new Set(await inactiveAmong(tx, wanted));
    // Nor is a member on either side of a block with the inviter (blacklist.md: a blocked user cannot
    // call you). One who blocked the inviter is shown Invited all the same, so the blocked inviter's
    // answer is what any invite gives (the blocked are never told); one the inviter blocks is skipped.
    const { blockedByMe, blockingMe } = await blocksAmong(tx, caller.userId, wanted);
    const invitees = wanted.filter((u) => !inactive.has(u) && !blockedByMe.has(u));
    const rows: NewRealtimeRow[] = [];
    for (const u of invitees) {
      await setRoster(tx, c.id, u, 'Invited', now);
      if (blockingMe.has(u)) continue;
      rows.push({ kind: 'ConferenceInvited', targetKind: 'User', targetUserId: u, chatId: c.chatId, refId: c.id, sessionKind: 'Conference' });
    }
    await enqueueRealtime(ctx.push, tx, rows, now);
  });
  return getConference(ctx.db, conferenceId, caller.userId);
}

export async function joinConference(ctx: CallsContext, caller: Principal, conferenceId: string): Promise<{ conference: ConferenceView; join: JoinView }> {
  await requireActiveCaller(ctx.db, caller.userId);
  const now = ctx.clock.now();
  const c = await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const conf = await conferenceFor(tx, conferenceId, caller.userId, true);
    if (conf.status !== 'Active') throw CallErrors.wrongState(conf.status, 'join');
    const already = (await rosterOf(tx, conf.id)).some((r) => r.userId === caller.userId && r.status === 'Joined');
    const rosterId = await setRoster(tx, conf.id, caller.userId, 'Joined', now);
    if (!already) await enqueueRealtime(ctx.push, tx, await conferenceFrames(tx, conf, [['ConferenceParticipantJoined', rosterId]]), now);
    return conf;
  });
  return {
    conference: await getConference(ctx.db, conferenceId, caller.userId),
    join: joinView(await ctx.mintJoin({ userId: caller.userId, sessionId: c.id, roomName: c.roomName })),
  };
}

export async function leaveConference(ctx: CallsContext, caller: Principal, conferenceId: string): Promise<ConferenceView> {
  const now = ctx.clock.now();
  await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const c = await conferenceFor(tx, conferenceId, caller.userId, true);
    const entry = await requireJoined(tx, c.id, caller.userId);
    await setRoster(tx, c.id, caller.userId, 'Left', now);
    const frames = [...(entry.screenSharing ? [['ScreenShareStopped', entry.id] as const] : []), ['ConferenceParticipantLeft', entry.id] as const];
    await enqueueRealtime(ctx.push, tx, await conferenceFrames(tx, c, frames), now);
  });
  return getConference(ctx.db, conferenceId, caller.userId);
}

/** The starter, the chat owner or an admin ends it; a running recording stops with it. */
export async function endConference(ctx: CallsContext, caller: Principal, conferenceId: string): Promise<ConferenceView> {
  const now = ctx.clock.now();
  const at = now.toISOString();
  await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const c = await conferenceFor(tx, conferenceId, caller.userId, true);
    if (c.initiatorUserId !== caller.userId && c.chatRole !== 'Owner' && !caller.admin) throw CallErrors.notParty('starter or the chat owner');
    if (c.status !== 'Active') throw CallErrors.wrongState(c.status, 'end');
    await query(
      tx,
      sql`update messenger.media_sessions set status = 'Ended', ended_at = ${at}, ended_by_user_id = ${caller.userId}, updated_at = ${at} where id = ${c.id}`,
    );
    await query(tx, sql`update messenger.media_session_participants set screen_sharing = false, updated_at = ${at} where session_id = ${c.id} and screen_sharing`);
    const { rows: stopped } = await query<{ id: string }>(
      tx,
      sql`update messenger.call_recordings set status = 'Stopped', stopped_at = ${at}, updated_at = ${at}
           where session_id = ${c.id} and status = 'Recording' returning id`,
    );
    const frames = [...stopped.map((r) => ['RecordingStopped', r.id] as const), ['ConferenceEnded', c.id] as const];
    await enqueueRealtime(ctx.push, tx, await conferenceFrames(tx, c, frames), now);
  });
  return getConference(ctx.db, conferenceId, caller.userId);
}
