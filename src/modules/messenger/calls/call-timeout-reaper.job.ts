import type { Db } from '../../../platform/db/index.ts';
import { defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import { expiredCallIds, missExpiredCalls } from './calls.ts';

export const CALL_TIMEOUT_REAPER_JOB = 'messenger-call-timeout-reaper';

/**
 * CallTimeoutReaper: an unanswered 1:1 invite becomes Missed after the ring timeout, announced as
 * CallMissed through the realtime outbox (never pushed directly, so a hub outage only delays it).
 * The claim does the work, one transaction per batch; a batch that fails is redone one call per
 * transaction, so one bad call never keeps the others ringing.
 */
export function callTimeoutReaperJob(db: Db, opts: { intervalMs: number; batchSize: number; maxRunMs: number }): BatchWorker {
  const missed = (ids: string[]) => ids.map((id) => ({ id }));
  return defineBatchWorker({
    name: CALL_TIMEOUT_REAPER_JOB,
    every: opts.intervalMs,
    singleRunner: true,
    settings: { batchSize: opts.batchSize, maxRunMs: opts.maxRunMs },
    phases: (run) => {
      run.count('missed', 0);
      return [
        {
          name: 'ringing',
          async claim(limit, run, exclude) {
            const ids = await db.transaction((tx) => missExpiredCalls(tx, run.now(), limit, exclude));
            run.count('missed', ids.length);
            return missed(ids);
          },
          oneByOne: {
            candidates: (limit, run, exclude) => expiredCallIds(db, run.now(), limit, exclude),
            async claimOne(id, run) {
              const ids = await db.transaction((tx) => missExpiredCalls(tx, run.now(), 1, [], id));
              run.count('missed', ids.length);
              return missed(ids);
            },
          },
        },
      ];
    },
  });
}
