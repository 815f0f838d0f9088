import type { Queryable } from '../../../platform/db/index.ts';
import type { JobContext } from '../../../platform/jobs/types.ts';
import { loadChannelConfigs } from '../channels.ts';
import { addCounts, deliverClaimed, emptyCounts, type BatchCounts, type DeliveryDeps } from './record.ts';
import type { SendSource } from '../metrics.ts';
import type { ClaimParams, ClaimedRow } from './sql.ts';

export interface ClaimLoopOptions {
  batchSize: number;
  leaseMs: number;
  maxRunMs: number;
}

export type Claim = (q: Queryable, p: ClaimParams) => Promise<ClaimedRow[]>;

/**
 * Bounded batches: claim (row locks + lease, one statement), send, record; repeat while batches come
 * back full, the run is younger than maxRunMs and no stop was asked. The run's id owns the leases.
 */
export async function runClaimLoop(
  deps: DeliveryDeps,
  opts: ClaimLoopOptions,
  claim: Claim,
  source: SendSource,
  ctx: Pick<JobContext, 'jobRunId' | 'signal' | 'now'>,
): Promise<BatchCounts> {
  const started = performance.now();
  const total = emptyCounts();
  while (!ctx.signal.aborted) {
    const configs = await loadChannelConfigs(deps.pool);
    const now = ctx.now();
    const rows = await claim(deps.pool, {
      now,
      leaseOwner: ctx.jobRunId,
      leaseUntil: new Date(now.getTime() + opts.leaseMs),
      availableProviders: deps.providers.availableKeys(),
      limit: opts.batchSize,
    });
    if (rows.length === 0) break;
    addCounts(total, await deliverClaimed(deps, rows, configs, { source, leaseOwner: ctx.jobRunId, signal: ctx.signal, now: ctx.now }));
    if (rows.length < opts.batchSize || performance.now() - started > opts.maxRunMs) break;
  }
  return total;
}
