import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { MessengerPushKind } from '../model/push-kinds.ts';
import type { NewRealtimeRow } from '../model/push-rows.ts';
import { ringConsent } from './ring-consent.ts';
import { conferenceSignal } from './signals.ts';

/**
 * Who a conference's frames reach (docs/security.md, "Consent", Rings). A group: the whole chat,
 * as every group frame. A Direct chat: every frame of the conference — its start, roster, screen
 * share, recording and end — follows the 1:1 call's ring consent (ring-consent.ts) between the
 * starter and the other member, so a member who refused the start (a blocker, or the other side of
 * an unanswered message request) does not learn of the call from its later frames either. The other
 * member gets a frame when no block stands either way and they consent to the starter, or they are
 * on the conference's roster (invited — an invite rings them personally — or joined on their own);
 * otherwise the frame goes to the starter's own devices alone (user:{StarterId}).
 *
 * Evaluated per frame, in the writing transaction, not decided once at the start: a block added
 * mid-call stops the very next frame from reaching the blocker, and one lifted (or a request
 * accepted) mid-call lets the rest of the call through, as the chat's REST view of the conference
 * already does. A stored "who was rung" would go on telling a blocker of a call they now refuse.
 */
export type ConferenceAudience = 'chat' | 'starter';

export async function conferenceAudience(tx: Db, c: { id: string; chatId: string; initiatorUserId: string }): Promise<ConferenceAudience> {
  const { rows: [chat] } = await query<{ kind: string; other: string | null; onRoster: boolean }>(
    tx,
    sql`select ch.kind, o.user_id as other,
               exists (select 1 from messenger.media_session_participants r where r.session_id = ${c.id} and r.user_id = o.user_id) as "onRoster"
          from messenger.chats ch
          left join messenger.chat_participants o on o.chat_id = ch.id and o.status = 'Active' and o.user_id <> ${c.initiatorUserId}
         where ch.id = ${c.chatId}
         limit 1`,
  );
  if (!chat || chat.kind !== 'Direct' || chat.other === null) return 'chat';
  const consent = await ringConsent(tx, c.initiatorUserId, chat.other);
  if (consent === 'ring') return 'chat';
  return consent === 'request' && chat.onRoster ? 'chat' : 'starter';
}

/** The rows of a conference's frames (kind, the entity it names), to its audience now. */
export async function conferenceFrames(
  tx: Db,
  c: { id: string; chatId: string; initiatorUserId: string },
  frames: readonly (readonly [MessengerPushKind, string])[],
): Promise<NewRealtimeRow[]> {
  if (frames.length === 0) return [];
  const audience = await conferenceAudience(tx, c);
  return frames.map(([kind, refId]) => {
    const row = conferenceSignal(kind, c.chatId, refId);
    return audience === 'chat' ? row : { ...row, targetKind: 'User', targetUserId: c.initiatorUserId };
  });
}
