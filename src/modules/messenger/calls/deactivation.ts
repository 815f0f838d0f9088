import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { MessengerPushKind } from '../model/push-kinds.ts';
import { enqueueRealtime, type NewRealtimeRow, type PushWriter } from '../model/push-rows.ts';
import { callSignal } from './signals.ts';
import { conferenceFrames } from './conference-audience.ts';

/**
 * A user the replica turns inactive (seed 002: Blocked, Archived, an unknown status) is taken out
 * of every media session at once, in the replica write's transaction, with the frames the normal
 * paths write, so the other parties learn it with the same events:
 *
 *   - a 1:1 call in progress ends (CallEnded, EndedByUserId the deactivated party);
 *   - a call they are ringing is cancelled (CallCancelled), as if they had hung up;
 *   - a call ringing them is missed (CallMissed): it can no longer be answered by anyone;
 *   - a running conference they joined is left (ConferenceParticipantLeft, after
 *     ScreenShareStopped when they were sharing), as leaveConference does; the conference and a
 *     recording they started go on for the others, as after any leave.
 *
 * Set-based and in the consumer's transaction: a call answered concurrently either commits first
 * (the update then waits for its row lock and ends the now Active call) or finds it over
 * (MSG_CALL_INVALID_STATE). Only a running session holds a party; an Invited roster row is left,
 * since an inactive user can neither join nor be handed a join token (realtime-dispatch/refs.ts).
 */

/** The signal each outcome of a call taken from a deactivated party announces to both parties. */
const CALL_SIGNAL: Record<string, MessengerPushKind> = { Ended: 'CallEnded', Cancelled: 'CallCancelled', Missed: 'CallMissed' };

export async function removeFromMediaSessions(push: PushWriter, tx: Db, userIds: readonly string[], now: Date): Promise<void> {
  if (userIds.length === 0) return;
  const users = sql`${sql.param(userIds)}::uuid[]`;
  const at = now.toISOString();
  // Every SET expression reads the row as it was before the update.
  const { rows: calls } = await query<{ id: string; status: string; initiatorUserId: string; calleeUserId: string }>(
    tx,
    sql`update messenger.media_sessions
           set status = case when status = 'Active' then 'Ended' when initiator_user_id = any(${users}) then 'Cancelled' else 'Missed' end,
               ended_by_user_id = case when status = 'Active' and initiator_user_id = any(${users}) then initiator_user_id
                                       when status = 'Active' then callee_user_id
                                       when initiator_user_id = any(${users}) then initiator_user_id end,
               ended_at = ${at}, ring_expires_at = null, updated_at = ${at}
         where session_kind = 'Direct' and status in ('Ringing', 'Active')
           and (initiator_user_id = any(${users}) or callee_user_id = any(${users}))
        returning id, status, initiator_user_id as "initiatorUserId", callee_user_id as "calleeUserId"`,
  );
  const { rows: left } = await query<{ id: string; sessionId: string; chatId: string; initiatorUserId: string; wasSharing: boolean }>(
    tx,
    sql`with leaving as (
          select p.id, p.screen_sharing, s.id as session_id, s.chat_id, s.initiator_user_id
            from messenger.media_session_participants p
            join messenger.media_sessions s on s.id = p.session_id
           where p.user_id = any(${users}) and p.status = 'Joined' and s.session_kind = 'Conference' and s.status = 'Active'
           for update of p
        )
        update messenger.media_session_participants p
           set status = 'Left', screen_sharing = false, left_at = ${at}, updated_at = ${at}
          from leaving l
         where p.id = l.id
        returning p.id, l.session_id as "sessionId", l.chat_id as "chatId", l.initiator_user_id as "initiatorUserId", l.screen_sharing as "wasSharing"`,
  );
  const rows: NewRealtimeRow[] = calls.flatMap((c) => callSignal(CALL_SIGNAL[c.status]!, c.id, [c.initiatorUserId, c.calleeUserId]));
  // A Direct chat's conference keeps to its ring consent here too (conference-audience.ts).
  for (const p of left) {
    const frames = [...(p.wasSharing ? [['ScreenShareStopped', p.id] as const] : []), ['ConferenceParticipantLeft', p.id] as const];
    rows.push(...(await conferenceFrames(tx, { id: p.sessionId, chatId: p.chatId, initiatorUserId: p.initiatorUserId }, frames)));
  }
  await enqueueRealtime(push, tx, rows, now);
}
