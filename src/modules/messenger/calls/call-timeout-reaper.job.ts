import type { Db } from '../../../platform/db/index.ts';
import type { PushWriter } from '../model/push-rows.ts';
import { defineSweep, type BatchWorker } from '../../../platform/jobs/index.ts';
import { expiredCallIds, missExpiredCalls } from './calls.ts';

export const CALL_TIMEOUT_REAPER_JOB = 'messenger-call-timeout-reaper';

/**
 * CallTimeoutReaper: an unanswered 1:1 invite becomes Missed after the ring timeout, announced as
 * CallMissed through the realtime outbox (never pushed directly, so a hub outage only delays it).
 * The claim does the work, one transaction per batch; a batch that fails is redone one call per
 * transaction, so one bad call never keeps the others ringing.
 */
export function callTimeoutReaperJob(db: Db, push: PushWriter, opts: { intervalMs: number; batchSize: number; maxRunMs: number }): BatchWorker {
  const missed = (ids: string[]) => ids.map((id) => ({ id }));
  return defineSweep({
    name: CALL_TIMEOUT_REAPER_JOB,
    every: opts.intervalMs,
    batchSize: opts.batchSize,
    maxRunMs: opts.maxRunMs,
    steps: [
      {
        name: 'ringing',
        count: 'missed',
        sweep: async (limit, run, _state, exclude) => missed(await db.transaction((tx) => missExpiredCalls(push, tx, run.now(), limit, exclude))),
        oneByOne: {
          candidates: (limit, run, _state, exclude) => expiredCallIds(db, run.now(), limit, exclude),
          sweepOne: async (id, run) => missed(await db.transaction((tx) => missExpiredCalls(push, tx, run.now(), 1, [], id))),
        },
      },
    ],
  });
}
