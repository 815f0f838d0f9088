import type { Db } from '../../../platform/db/index.ts';
import type { NewPushRow, Push, PushTargetKind } from '../../../platform/push/index.ts';
import type { SessionKind } from './call-kinds.ts';
import type { MessengerPushKind } from './push-kinds.ts';

/**
 * The messenger's push-row writer: every part writes its rows through the kernel's one writer
 * (Push.enqueue, which refuses a kind no module registered), typed to the messenger's kinds. It sits
 * on the bottom floor so the parts that write need nothing above them.
 */

/** A messenger push intent: one of its kinds, with typed references. */
export interface NewRealtimeRow extends NewPushRow {
  kind: MessengerPushKind;
  targetKind: PushTargetKind;
  sessionKind?: SessionKind | null;
}

/** What a part writes push rows with: the push port (ModuleDeps.push), or just its writer. */
export type PushWriter = Pick<Push, 'enqueue'>;

/** In the owner's transaction, after its row locks (the UUIDv7 ids then follow commit order). */
export const enqueueRealtime = (push: PushWriter, tx: Db, rows: readonly NewRealtimeRow[], now: Date): Promise<void> => push.enqueue(tx, rows, now);
