import type { Db } from '../../../platform/db/index.ts';
import { claimDue as claimPushRows, claimReadsSql, type ClaimedRow as PushClaimedRow, type ClaimParams } from '../../../platform/push/index.ts';
import { MESSENGER_PUSH_KINDS } from '../model/push-kinds.ts';
import type { OutboxRowRef } from './payloads.ts';
import type { MessageRef } from './ref-types.ts';
import { MESSENGER_CLAIM_READS } from './register.ts';

/**
 * The dispatcher's claim as it runs with the messenger's reads (register.ts), typed to its rows.
 * The running dispatcher calls the kernel's claim with the registered reads; this is the same claim
 * for the tests that drive it on the messenger's rows (the writer is model/push-rows.ts).
 */

/** A claimed messenger row: its references typed, and the message the claim read beside a message row. */
export type ClaimedRow = Omit<PushClaimedRow, keyof OutboxRowRef> &
  OutboxRowRef & {
    /** The message a message row points at, read by the claim itself (null: none, or it is gone). */
    message?: MessageRef | null;
  };

/** The dispatcher's claim (platform/push claim-sql.ts) with what the messenger reads beside its rows (register.ts). */
const MESSENGER_READS = claimReadsSql([{ kinds: MESSENGER_PUSH_KINDS, reads: MESSENGER_CLAIM_READS }]);

export const claimDue = (db: Db, p: ClaimParams): Promise<(ClaimedRow & { exhausted: boolean })[]> =>
  claimPushRows(db, p, MESSENGER_READS) as Promise<(ClaimedRow & { exhausted: boolean })[]>;

export { recordOutcomes, type ClaimParams, type OutcomeUpdate } from '../../../platform/push/index.ts';
