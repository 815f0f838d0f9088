import type { Db } from '../../../platform/db/index.ts';
import type { JobContext, JobDefinition } from '../../../platform/jobs/index.ts';
import { missExpiredCalls } from './calls.ts';

export const CALL_TIMEOUT_REAPER_JOB = 'messenger-call-timeout-reaper';
const BATCH = 100;

/**
 * CallTimeoutReaper: an unanswered 1:1 invite becomes Missed after the ring timeout, announced as
 * CallMissed through the realtime outbox (never pushed directly, so a hub outage only delays it).
 */
export async function reapUnansweredCalls(db: Db, ctx: Pick<JobContext, 'signal' | 'now'>): Promise<{ missed: number }> {
  let missed = 0;
  while (!ctx.signal.aborted) {
    const n = await db.transaction((tx) => missExpiredCalls(tx, ctx.now(), BATCH));
    missed += n;
    if (n < BATCH) break;
  }
  return { missed };
}

export function callTimeoutReaperJob(db: Db, opts: { intervalMs: number }): JobDefinition {
  return {
    name: CALL_TIMEOUT_REAPER_JOB,
    every: opts.intervalMs,
    singleRunner: true,
    run: (ctx) => reapUnansweredCalls(db, ctx),
  };
}
