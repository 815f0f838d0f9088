import { sql } from 'drizzle-orm';
import type { Principal } from '../../../platform/http/index.ts';
import { AppError } from '../../../platform/http/index.ts';
import { newId } from '../../../platform/time.ts';
import { query } from '../../../platform/db/index.ts';
import { isoOf } from '../sql-rows.ts';
import { conferenceFor, getConference, requireJoined, rosterOf, type ConferenceView } from './conferences.ts';
import { conferenceFrames } from './conference-audience.ts';
import type { CallsContext } from './media-join.ts';
import { CallErrors } from '../errors.ts';
import type { RecordingStatus } from '../model/call-kinds.ts';
import { enqueueRealtime } from '../model/push-rows.ts';
import { activeUserTransaction } from '../user-replica/replica-reads.ts';

/**
 * Screen sharing (one sharer at a time) and recordings (call-recording.md: Recording → Stopped →
 * Available | Failed, the outcome reported by the media side) of a live conference.
 */

export interface RecordingView {
  id: string;
  conferenceId: string;
  startedByUserId: string;
  status: RecordingStatus;
  errorCode: string | null;
  startedAt: string;
  stoppedAt: string | null;
  completedAt: string | null;
}

interface RecordingRow extends Omit<RecordingView, 'startedAt' | 'stoppedAt' | 'completedAt'> {
  startedAt: Date;
  stoppedAt: Date | null;
  completedAt: Date | null;
  chatId: string;
  initiatorUserId: string;
}

const RECORDING = sql.raw(`r.id, r.session_id as "conferenceId", r.started_by_user_id as "startedByUserId", r.status, r.error_code as "errorCode",
  r.started_at as "startedAt", r.stopped_at as "stoppedAt", r.completed_at as "completedAt", s.chat_id as "chatId",
  s.initiator_user_id as "initiatorUserId"`);

const recordingView = (r: RecordingRow): RecordingView => ({
  id: r.id,
  conferenceId: r.conferenceId,
  startedByUserId: r.startedByUserId,
  status: r.status,
  errorCode: r.errorCode,
  startedAt: isoOf(r.startedAt)!,
  stoppedAt: isoOf(r.stoppedAt),
  completedAt: isoOf(r.completedAt),
});

const screenShareBusy = () => new AppError('MSG_SCREEN_SHARE_BUSY', 'someone else is sharing their screen', 409);

export async function setScreenShare(ctx: CallsContext, caller: Principal, conferenceId: string, sharing: boolean): Promise<ConferenceView> {
  const now = ctx.clock.now();
  await activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const c = await conferenceFor(tx, conferenceId, caller.userId, true);
    if (c.status !== 'Active') throw CallErrors.wrongState(c.status, 'share the screen of');
    const entry = await requireJoined(tx, c.id, caller.userId);
    if (entry.screenSharing === sharing) return;
    if (sharing && (await rosterOf(tx, c.id)).some((r) => r.screenSharing)) throw screenShareBusy();
    await query(
      tx,
      sql`update messenger.media_session_participants set screen_sharing = ${sharing}, updated_at = ${now.toISOString()} where id = ${entry.id}`,
    );
    await enqueueRealtime(ctx.push, tx, await conferenceFrames(tx, c, [[sharing ? 'ScreenShareStarted' : 'ScreenShareStopped', entry.id]]), now);
  });
  return getConference(ctx.db, conferenceId, caller.userId);
}

export async function startRecording(ctx: CallsContext, caller: Principal, conferenceId: string): Promise<RecordingView> {
  const now = ctx.clock.now();
  const id = newId();
  return activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const c = await conferenceFor(tx, conferenceId, caller.userId, true);
    if (c.status !== 'Active') throw CallErrors.wrongState(c.status, 'record');
    await requireJoined(tx, c.id, caller.userId);
    const { rows: inserted } = await query<{ id: string }>(
      tx,
      sql`insert into messenger.call_recordings (id, session_id, started_by_user_id, status, started_at, updated_at)
          values (${id}, ${c.id}, ${caller.userId}, 'Recording', ${now.toISOString()}, ${now.toISOString()})
          on conflict (session_id) where status = 'Recording' do nothing returning id`,
    );
    if (inserted.length === 0) throw CallErrors.recordingActive();
    await enqueueRealtime(ctx.push, tx, await conferenceFrames(tx, c, [['RecordingStarted', id]]), now);
    return recordingView((await query<RecordingRow>(tx, sql`select ${RECORDING} from messenger.call_recordings r join messenger.media_sessions s on s.id = r.session_id where r.id = ${id}`)).rows[0]!);
  });
}

export async function stopRecording(ctx: CallsContext, caller: Principal, conferenceId: string, recordingId: string): Promise<RecordingView> {
  const now = ctx.clock.now();
  return activeUserTransaction(ctx.db, caller.userId, async (tx) => {
    const c = await conferenceFor(tx, conferenceId, caller.userId, true);
    await requireJoined(tx, c.id, caller.userId);
    const { rows: [r] } = await query<RecordingRow>(
      tx,
      sql`update messenger.call_recordings r set status = 'Stopped', stopped_at = ${now.toISOString()}, updated_at = ${now.toISOString()}
            from messenger.media_sessions s
           where r.id = ${recordingId} and r.session_id = ${c.id} and s.id = r.session_id and r.status = 'Recording'
           returning ${RECORDING}`,
    );
    if (!r) {
      const { rows: exists } = await query<{ status: string }>(tx, sql`select status from messenger.call_recordings where id = ${recordingId} and session_id = ${c.id}`);
      throw exists[0] ? CallErrors.recordingState(exists[0].status) : CallErrors.recordingNotFound();
    }
    await enqueueRealtime(ctx.push, tx, await conferenceFrames(tx, c, [['RecordingStopped', r.id]]), now);
    return recordingView(r);
  });
}

/** The media side reports how a stopped recording ended (admin/service token): Available or Failed with a code. */
export async function recordRecordingOutcome(
  ctx: CallsContext,
  recordingId: string,
  outcome: { status: 'Available' | 'Failed'; errorCode?: string },
): Promise<RecordingView> {
  const now = ctx.clock.now();
  return ctx.db.transaction(async (tx) => {
    const { rows: [r] } = await query<RecordingRow>(
      tx,
      sql`update messenger.call_recordings r
             set status = ${outcome.status}, error_code = ${outcome.status === 'Failed' ? (outcome.errorCode ?? 'RECORDING_FAILED') : null},
                 completed_at = ${now.toISOString()}, stopped_at = coalesce(r.stopped_at, ${now.toISOString()}::timestamptz), updated_at = ${now.toISOString()}
            from messenger.media_sessions s
           where r.id = ${recordingId} and s.id = r.session_id and r.status in ('Recording', 'Stopped')
           returning ${RECORDING}`,
    );
    if (!r) {
      const { rows: exists } = await query<{ status: string }>(tx, sql`select status from messenger.call_recordings where id = ${recordingId}`);
      throw exists[0] ? CallErrors.recordingState(exists[0].status) : CallErrors.recordingNotFound();
    }
    const session = { id: r.conferenceId, chatId: r.chatId, initiatorUserId: r.initiatorUserId };
    await enqueueRealtime(ctx.push, tx, await conferenceFrames(tx, session, [[outcome.status === 'Available' ? 'RecordingAvailable' : 'RecordingFailed', r.id]]), now);
    return recordingView(r);
  });
}
