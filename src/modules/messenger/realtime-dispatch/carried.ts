import type { Db } from '../../../platform/db/index.ts';
import type { UserFrame } from '../../../platform/module.ts';
import { CARRIED_KINDS, eventNameOf, type CarriedKind } from './kinds.ts';
import { enqueueCarried } from './outbox-sql.ts';

/**
 * The messenger's side of the kernel's user-frame port (ModuleDeps.userFrames): another module's
 * frames to `user:{UserId}` written into the realtime outbox in that module's own transaction, so
 * the one dispatcher pushes them after the commit (retrying while the backplane is down), gives
 * each its stream position in push order and keeps it replayable by GET /api/messenger/events.
 */

const KIND_OF_EVENT = new Map<string, CarriedKind>(CARRIED_KINDS.map((k) => [eventNameOf(k), k]));

/** Call in the caller's transaction, in the order the frames are to reach each user. */
export async function enqueueUserFrames(tx: Db, frames: readonly UserFrame[], now: Date): Promise<void> {
  const rows = frames.map((f) => {
    const kind = KIND_OF_EVENT.get(f.event);
    // A programming error, not input: only the kinds the dispatcher knows to carry may go this way.
    if (!kind) throw new Error(`the realtime outbox carries no frame named ${f.event}`);
    return { kind, targetUserId: f.userId, payload: f.payload };
  });
  await enqueueCarried(tx, rows, now);
}
