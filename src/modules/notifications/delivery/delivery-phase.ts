import type { Db } from '../../../platform/db/index.ts';
import { batchPhase, type BatchPhase, type BatchRun } from '../../../platform/jobs/index.ts';
import { channelPolicy, loadChannelConfigs } from '../channels.ts';
import type { SendSource } from '../metrics.ts';
import { DELIVERY_COUNTS, type ClaimedNotification, type DeliveryDeps } from './outcomes.ts';
import { recordOneSend, recordSends } from './record.ts';
import { sendNotification, type SendAttempt } from './send.ts';
import type { DeliveryJobOptions } from '../settings.ts';
import type { ClaimedRow, ClaimParams } from './sql.ts';

/** One of the claim statements of sql.ts. */
export type ClaimStatement = (db: Db, p: ClaimParams) => Promise<ClaimedRow[]>;

/** Every run of a delivery job reports all its counts, zero or not. */
export function startDeliveryCounts(run: BatchRun): void {
  for (const name of DELIVERY_COUNTS) run.count(name, 0);
}

/**
 * The send phase the dispatcher and the retry worker share:
 *   1. claim — the channel configs (a handful of rows, read once per batch), then the job's claim
 *      statement: row locks with SKIP LOCKED and a lease owned by the run (leases also keep this
 *      run's failed rows out of its later claims);
 *   2. process — one provider call per row, outside any transaction (for SMTP, after its send
 *      intent, intent.ts);
 *   3. record — the batch's outcomes with their events in one transaction (record.ts), row by row
 *      when that fails.
 */
export function deliveryPhase(
  deps: DeliveryDeps,
  opts: Pick<DeliveryJobOptions, 'leaseMs' | 'hardTimeoutMs'> & { name: string; source: SendSource; claim: ClaimStatement },
): BatchPhase<ClaimedNotification, SendAttempt> {
  return batchPhase<ClaimedNotification, SendAttempt>({
    name: opts.name,
    async claim(limit, run) {
      const configs = await loadChannelConfigs(deps.db);
      const now = run.now();
      const rows = await opts.claim(deps.db, {
        now,
        leaseOwner: run.jobRunId,
        leaseUntil: new Date(now.getTime() + opts.leaseMs),
        availableProviders: deps.providers.availableKeys(),
        limit,
        ...(run.fence ? { fence: run.fence } : {}),
      });
      return rows.map((row) => ({ ...row, providerKey: configs.get(row.channel)?.providerKey ?? '', policy: channelPolicy(configs, row.channel) }));
    },
    // Seed 004 "Traces": a child span per send under the run's (and the batch's) span.
    traceRow: {
      name: 'send',
      attributes: (r) => ({ notificationId: r.id, channel: r.channel, attempts: r.attempts, deliveryCycle: r.deliveryCycle }),
    },
    process: (row, run) => sendNotification(deps, row, run, opts),
    record: (outcomes, run) => recordSends(deps, outcomes, opts.source, run),
    recordOne: (outcome, run) => recordOneSend(deps, outcome, opts.source, run),
  });
}

export const batchSettingsOf = (o: DeliveryJobOptions) => ({ batchSize: o.batchSize, maxRunMs: o.maxRunMs, concurrency: o.concurrency });
