import type { MessengerPushKind } from '../model/push-kinds.ts';
import type { NewRealtimeRow } from '../model/push-rows.ts';

/**
 * The realtime rows media changes write: a 1:1 call's signal to each party's user:{UserId}, a
 * conference's to chat:{ChatId}. Apart from calls.ts and conferences.ts so the user replica's
 * deactivation (deactivation.ts) writes the same rows without depending on the request paths.
 */

/** Push intents of a call signal to each listed party. */
export const callSignal = (kind: MessengerPushKind, callId: string, to: string[]): NewRealtimeRow[] =>
  to.map((userId) => ({ kind, targetKind: 'User', targetUserId: userId, refId: callId, sessionKind: 'Direct' }));

export const conferenceSignal = (kind: MessengerPushKind, chatId: string, refId: string): NewRealtimeRow => ({
  kind,
  targetKind: 'ChatGroup',
  chatId,
  refId,
  sessionKind: 'Conference',
});
