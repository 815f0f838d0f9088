import type { Db } from '../../../platform/db/index.ts';
import { enqueueRealtime as enqueuePush, type NewPushRow } from '../../../platform/push/index.ts';
import type { SessionKind } from './call-kinds.ts';
import type { MessengerPushKind, RealtimeTargetKind } from './push-kinds.ts';

/**
 * The messenger's push-row writer: every part writes its rows on the kernel's push path
 * (platform/push owns push.realtime_outbox's statements) through this one function, typed to
 * the messenger's kinds. It sits on the bottom floor so the parts that write need nothing above them.
 */

/** A messenger push intent: one of its kinds, with typed references (written through the kernel's push part). */
export interface NewRealtimeRow extends NewPushRow {
  kind: MessengerPushKind;
  targetKind: RealtimeTargetKind;
  sessionKind?: SessionKind | null;
}

/** The kernel's enqueue (platform/push), typed to the messenger's rows: in the owner's transaction, after its row locks. */
export const enqueueRealtime: (tx: Db, rows: readonly NewRealtimeRow[], now: Date) => Promise<void> = enqueuePush;
