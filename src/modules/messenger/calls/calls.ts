import { sql } from 'drizzle-orm';
import type { Principal } from '../../../platform/http/index.ts';
import { query, type Db } from '../../../platform/db/index.ts';
import { newId } from '../../../platform/time.ts';
import type { MediaJoinModel } from './media-join.ts';
import { isoOf } from '../sql-rows.ts';
import type { CallsContext } from './media-join.ts';
import { CallErrors, ChatErrors } from '../errors.ts';
import type { MessengerPushKind } from '../model/push-kinds.ts';
import type { MediaKind, SessionStatus } from '../model/call-kinds.ts';
import { enqueueRealtime, type PushWriter } from '../model/push-rows.ts';
import { callSignal } from './signals.ts';
import { ringConsent } from './ring-consent.ts';
import { activeUserTransaction, requireActiveCaller, requireAddressableUser } from '../user-replica/replica-reads.ts';

/** An unanswered 1:1 call becomes CallMissed after 45 s, as phones ring (once MESSENGER_REALTIME_CALL_RING_TIMEOUT_SECONDS). */
export const CALL_RING_TIMEOUT_MS = 45_000;

/**
 * 1:1 calls (call-session.md, UC-MSG-005; SessionKind Direct): Ringing → Active | Declined |
 * Cancelled | Missed (CallTimeoutReaper), Active → Ended. Signals go to both parties' user:{UserId}
 * groups (every device of each), the invite to the callee only. Join models are minted per
 * request or push and never stored: the session keeps only its RoomName.
 */

export interface CallRow {
  id: string;
  initiatorUserId: string;
  calleeUserId: string;
  media: MediaKind;
  status: SessionStatus;
  roomName: string;
  createdAt: Date;
  ringExpiresAt: Date | null;
  answeredAt: Date | null;
  endedAt: Date | null;
  endedByUserId: string | null;
}

type Times = 'createdAt' | 'ringExpiresAt' | 'answeredAt' | 'endedAt';
/** What clients see: the initiator named as the caller, times as ISO text. */
export type CallView = Omit<CallRow, 'initiatorUserId' | Times> & { callerUserId: string; createdAt: string } & Record<Exclude<Times, 'createdAt'>, string | null>;

const COLUMNS = sql.raw(`id, initiator_user_id as "initiatorUserId", callee_user_id as "calleeUserId", media, status, room_name as "roomName",
  created_at as "createdAt", ring_expires_at as "ringExpiresAt", answered_at as "answeredAt", ended_at as "endedAt", ended_by_user_id as "endedByUserId"`);

export const callView = (c: CallRow): CallView => ({
  id: c.id,
  callerUserId: c.initiatorUserId,
  calleeUserId: c.calleeUserId,
  media: c.media,
  status: c.status,
  roomName: c.roomName,
  createdAt: isoOf(c.createdAt)!,
  ringExpiresAt: isoOf(c.ringExpiresAt),
  answeredAt: isoOf(c.answeredAt),
  endedAt: isoOf(c.endedAt),
  endedByUserId: c.endedByUserId,
});

/** The REST shape of a MediaJoinModel (camelCase like every REST body). */
export interface JoinView {
  roomName: string;
  accessToken: string;
  expiresAt: string;
  iceServers: { urls: string[]; username: string; credential: string }[];
}

export const joinView = (j: MediaJoinModel): JoinView => ({
  roomName: j.RoomName,
  accessToken: j.AccessToken,
  expiresAt: j.ExpiresAt,
  iceServers: j.IceServers.map((s) => ({ urls: s.Urls, username: s.Username, credential: s.Credential })),
});

async function lockCallOf(tx: Db, callId: string, userId: string): Promise<CallRow> {
  const { rows: [c] } = await query<CallRow>(
    tx,
    sql`select ${COLUMNS} from messenger.media_sessions
         where id = ${callId} and session_kind = 'Direct' and ${userId} in (initiator_user_id, callee_user_id) for update`,
  );
  if (!c) throw CallErrors.notFound();
  return c;
}

export async function getCall(q: Db, callId: string, userId: string): Promise<CallView> {
  const { rows: [c] } = await query<CallRow>(
    q,
    sql`select ${COLUMNS} from messenger.media_sessions where id = ${callId} and session_kind = 'Direct' and ${userId} in (initiator_user_id, callee_user_id)`,
  );
  if (!c) throw CallErrors.notFound();
  return callView(c);
}

/**
 * Starts a 1:1 call. One the callee consented to rings them (`call_invited`) and answers the
 * caller's join model; any other is a missed-call request (ring-consent.ts): stored Missed at once,
 * `call_missed` to both (to the caller alone when the callee blocks them), no join model.
 */
export async function inviteCall(ctx: CallsContext, caller: Principal, input: { calleeUserId: string; media: MediaKind }): Promise<{ call: CallView; join?: JoinView }> {
  await requireActiveCaller(ctx.db, caller.userId);
  const me = caller.userId;
  const callee = input.calleeUserId.toLowerCase();
  if (callee === me) throw CallErrors.self();
  await requireAddressableUser(ctx.db, callee);
  const consent = await ringConsent(ctx.db, me, callee);
  if (consent === 'blockedByCaller') throw ChatErrors.blocked();
  const now = ctx.clock.now();
  const at = now.toISOString();
  const id = newId();
  const rings = consent === 'ring';
  const ringExpiresAt = rings ? new Date(now.getTime() + CALL_RING_TIMEOUT_MS).toISOString() : null;
  const row = await activeUserTransaction(ctx.db, me, async (tx) => {
    const [c] = (await query<CallRow>(
      tx,
      sql`insert into messenger.media_sessions
            (id, session_kind, initiator_user_id, callee_user_id, media, status, room_name, ring_expires_at, ended_at, created_at, updated_at)
          values (${id}, 'Direct', ${me}, ${callee}, ${input.media}, ${rings ? 'Ringing' : 'Missed'}, ${`call-${id}`}, ${ringExpiresAt}::timestamptz,
                  ${rings ? null : at}::timestamptz, ${at}, ${at})
          returning ${COLUMNS}`,
    )).rows as [CallRow];
    if (rings) await enqueueRealtime(ctx.push, tx, callSignal('CallInvited', id, [callee]), now);
    else await enqueueRealtime(ctx.push, tx, callSignal('CallMissed', id, consent === 'silent' ? [me] : [me, callee]), now);
    return c;
  });
  if (!rings) return { call: callView(row) };
  return { call: callView(row), join: joinView(await ctx.mintJoin({ userId: me, sessionId: id, roomName: row.roomName })) };
}

type Transition = {
  action: string;
  /** Who may: the caller (initiator), the callee, or either. */
  by: 'caller' | 'callee' | 'either';
  from: SessionStatus;
  to: SessionStatus;
  signal: MessengerPushKind;
};

export const CALL_TRANSITIONS = {
  answer: { action: 'answer', by: 'callee', from: 'Ringing', to: 'Active', signal: 'CallAnswered' },
  decline: { action: 'decline', by: 'callee', from: 'Ringing', to: 'Declined', signal: 'CallDeclined' },
  cancel: { action: 'cancel', by: 'caller', from: 'Ringing', to: 'Cancelled', signal: 'CallCancelled' },
  end: { action: 'end', by: 'either', from: 'Active', to: 'Ended', signal: 'CallEnded' },
} as const satisfies Record<string, Transition>;

export type CallAction = keyof typeof CALL_TRANSITIONS;

/** Applies a caller/callee action, writing the signal for both parties in the same transaction. */
export async function transitionCall(ctx: CallsContext, caller: Principal, callId: string, action: CallAction): Promise<{ call: CallView; join?: JoinView }> {
  const t: Transition = CALL_TRANSITIONS[action];
  const me = caller.userId;
  const now = ctx.clock.now();
  const row = await activeUserTransaction(ctx.db, me, async (tx) => {
    const c = await lockCallOf(tx, callId, me);
    const role = c.initiatorUserId === me ? 'caller' : 'callee';
    if (t.by !== 'either' && t.by !== role) throw CallErrors.notParty(t.by);
    if (c.status !== t.from) throw CallErrors.wrongState(c.status, t.action);
    return applyCallTransition(ctx.push, tx, c, t, now, me);
  });
  if (action !== 'answer') return { call: callView(row) };
  return { call: callView(row), join: joinView(await ctx.mintJoin({ userId: me, sessionId: row.id, roomName: row.roomName })) };
}

async function applyCallTransition(push: PushWriter, tx: Db, c: CallRow, t: Transition, now: Date, actor: string | null): Promise<CallRow> {
  const at = now.toISOString();
  const [row] = (await query<CallRow>(
    tx,
    sql`update messenger.media_sessions
           set status = ${t.to}, updated_at = ${at}, ring_expires_at = null,
               answered_at = ${t.to === 'Active' ? at : null}::timestamptz,
               ended_at = ${t.to === 'Active' ? null : at}::timestamptz,
               ended_by_user_id = ${t.to === 'Active' ? null : actor}::uuid
         where id = ${c.id} returning ${COLUMNS}`,
  )).rows as [CallRow];
  await enqueueRealtime(push, tx, callSignal(t.signal, c.id, [c.initiatorUserId, c.calleeUserId]), now);
  return row;
}

/** Ringing 1:1 calls whose ring timeout passed, oldest first (`only`: just that call, if it still is). */
const expiredRinging = (now: Date, limit: number, exclude: readonly string[], only?: string) =>
  sql`select ${COLUMNS} from messenger.media_sessions
       where status = 'Ringing' and session_kind = 'Direct' and ring_expires_at <= ${now.toISOString()}
         and not (id = any(${sql.param(exclude)}::uuid[])) ${only === undefined ? sql`` : sql`and id = ${only}`}
       order by ring_expires_at limit ${limit}`;

/**
 * CallTimeoutReaper's step: Ringing calls whose ring timeout passed become Missed, each with its
 * CallMissed push to both parties, in one transaction per batch (SKIP LOCKED: an answer that holds
 * the row wins, and the reaper takes it next time only if it is still Ringing). Returns their ids.
 */
export async function missExpiredCalls(push: PushWriter, tx: Db, now: Date, limit: number, exclude: readonly string[] = [], only?: string): Promise<string[]> {
  const { rows } = await query<CallRow>(tx, sql`${expiredRinging(now, limit, exclude, only)} for update skip locked`);
  for (const c of rows) await applyCallTransition(push, tx, c, { action: 'miss', by: 'either', from: 'Ringing', to: 'Missed', signal: 'CallMissed' }, now, null);
  return rows.map((c) => c.id);
}

/** The calls missExpiredCalls would take, read without locks: for the one-by-one redo of a failed batch. */
export async function expiredCallIds(db: Db, now: Date, limit: number, exclude: readonly string[]): Promise<string[]> {
  return (await query<CallRow>(db, expiredRinging(now, limit, exclude))).rows.map((c) => c.id);
}
