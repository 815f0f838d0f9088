import type { Db } from '../../../platform/db/index.ts';
import {
  claimDue as claimPushRows,
  enqueueRealtime as enqueuePush,
  type ClaimedRow as PushClaimedRow,
  type ClaimParams,
  type NewPushRow,
} from '../../../platform/push/index.ts';
import type { SessionKind } from '../calls/kinds.ts';
import type { MessengerPushKind, RealtimeTargetKind } from './kinds.ts';
import type { OutboxRowRef } from './payloads.ts';
import type { MessageRef } from './ref-types.ts';
import { MESSENGER_CLAIM_READS } from './register.ts';

/**
 * The messenger's rows on the kernel's push path (platform/push owns messenger.realtime_outbox's
 * statements): its writes, typed to its kinds, and the claim as it runs with the messenger's reads.
 */

/** A messenger push intent: one of its kinds, with typed references (written through the kernel's push part). */
export interface NewRealtimeRow extends NewPushRow {
  kind: MessengerPushKind;
  targetKind: RealtimeTargetKind;
  sessionKind?: SessionKind | null;
}

/** The kernel's enqueue (platform/push), typed to the messenger's rows: in the owner's transaction, after its row locks. */
export const enqueueRealtime: (tx: Db, rows: readonly NewRealtimeRow[], now: Date) => Promise<void> = enqueuePush;

/** A claimed messenger row: its references typed, and the message the claim read beside a message row. */
export type ClaimedRow = Omit<PushClaimedRow, keyof OutboxRowRef> &
  OutboxRowRef & {
    /** The message a message row points at, read by the claim itself (null: none, or it is gone). */
    message?: MessageRef | null;
  };

/** The dispatcher's claim (platform/push claim-sql.ts) with what the messenger reads beside its rows (register.ts). */
export const claimDue = (db: Db, p: ClaimParams): Promise<(ClaimedRow & { exhausted: boolean })[]> =>
  claimPushRows(db, p, MESSENGER_CLAIM_READS) as Promise<(ClaimedRow & { exhausted: boolean })[]>;

export { recordOutcomes, type ClaimParams, type OutcomeUpdate } from '../../../platform/push/index.ts';
