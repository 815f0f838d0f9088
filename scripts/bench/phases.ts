import diagnostics_channel from 'node:diagnostics_channel';
import type { BatchQueueTiming } from '../../src/modules/messenger/messages/send-queue.ts';
import { SEND_TIMING_CHANNEL } from '../../src/modules/messenger/messages/send.ts';
import { BATCH_TIMING_CHANNEL, type BatchTiming } from '../../src/platform/jobs/index.ts';
import { CLAIMED_TIMING_CHANNEL, REALTIME_DISPATCH_JOB, type ClaimedTiming } from '../../src/platform/push/index.ts';

/**
 * Where a message's time goes inside the server, from the timings the send queue, the job kernel and
 * the push part publish (diagnostics_channel; nothing is built while no one subscribes), each a
 * distribution over messages (a batch's time counts once per message in it), in ms:
 *   - sendQueueWait: submitted → its send statement started (coalescing, a free statement slot);
 *   - sendStatement: the statement's round trip, commit included (PostgreSQL's own execution time is
 *     the pg report's msPerCall; the rest is the commit's WAL flush, the driver and the event loop);
 *   - writtenToClaimed: the row's CreatedAt (taken as the send statement starts) → the claim that took
 *     it returned: the statement, the dispatcher's wake (or the batch it was busy with) and the claim;
 *   - claim: the claim statement's round trip (commit without waiting for the flush);
 *   - push: the claimed rows built and written to their sockets (the batch's last row; the client's
 *     receipt is the rest of the lag).
 */
export function collectPhases(): { report(): Record<string, { p50: number; p95: number }> } {
  const wait: number[] = [];
  const statement: number[] = [];
  const writtenToClaimed: number[] = [];
  const batches: BatchTiming[] = [];
  const onSend = (t: unknown) => {
    const s = t as BatchQueueTiming;
    for (const at of s.submittedAt) {
      wait.push(s.startedAt - at);
      statement.push(s.endedAt - s.startedAt);
    }
  };
  const onClaimed = (t: unknown) => {
    const c = t as ClaimedTiming;
    for (const created of c.createdAtMs) writtenToClaimed.push(c.claimedAtMs - created);
  };
  const onBatch = (t: unknown) => {
    const b = t as BatchTiming;
    if (b.job === REALTIME_DISPATCH_JOB) batches.push(b);
  };
  const channels: [string, (t: unknown) => void][] = [
    [SEND_TIMING_CHANNEL, onSend],
    [CLAIMED_TIMING_CHANNEL, onClaimed],
    [BATCH_TIMING_CHANNEL, onBatch],
  ];
  for (const [name, on] of channels) diagnostics_channel.subscribe(name, on);
  return {
    report() {
      for (const [name, on] of channels) diagnostics_channel.unsubscribe(name, on);
      const perRow = (f: (b: BatchTiming) => number) => batches.flatMap((b) => Array<number>(b.rows).fill(f(b)));
      return {
        sendQueueWait: summary(wait),
        sendStatement: summary(statement),
        writtenToClaimed: summary(writtenToClaimed),
        claim: summary(perRow((b) => b.claimEndedAt - b.claimStartedAt)),
        push: summary(perRow((b) => b.processEndedAt - b.claimEndedAt)),
      };
    },
  };
}

function summary(values: number[]): { p50: number; p95: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => (sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 100) / 100 : 0);
  return { p50: at(0.5), p95: at(0.95) };
}
