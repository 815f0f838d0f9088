import diagnostics_channel from 'node:diagnostics_channel';
import type { BatchQueueTiming } from '../../src/modules/messenger/messages/send-queue.ts';
import { SEND_TIMING_CHANNEL } from '../../src/modules/messenger/messages/send.ts';
import { BATCH_TIMING_CHANNEL, type BatchTiming } from '../../src/platform/jobs/index.ts';
import { REALTIME_DISPATCH_JOB } from '../../src/platform/push/index.ts';

/**
 * Where a message's time goes inside the server, from the timings the send queue and the job kernel
 * publish (diagnostics_channel; nothing is built while no one subscribes), each a distribution over
 * messages (a batch's time counts once per message in it), in ms:
 *   - sendQueueWait: submitted → its send statement started (coalescing, a free statement slot);
 *   - sendStatement: the statement's round trip, commit included (PostgreSQL's own execution time is
 *     the pg report's msPerCall; the rest is the commit's WAL flush, the driver and the event loop);
 *   - dispatcherWake: the statement returned → the dispatcher's next claim started (the in-process
 *     wake, or the batch it was busy with);
 *   - claim: the claim statement's round trip (commit without waiting for the flush);
 *   - push: the claimed rows built and written to their sockets (the batch's last row; the hub's
 *     writes are handed to the kernel, the client's receipt is the rest of the lag).
 */
export function collectPhases(): { report(): Record<string, { p50: number; p95: number }> } {
  const wait: number[] = [];
  const statement: number[] = [];
  const committedAt: { at: number; sends: number }[] = [];
  const claims: BatchTiming[] = [];
  const onSend = (t: unknown) => {
    const s = t as BatchQueueTiming;
    for (const at of s.submittedAt) {
      wait.push(s.startedAt - at);
      statement.push(s.endedAt - s.startedAt);
    }
    committedAt.push({ at: s.endedAt, sends: s.submittedAt.length });
  };
  const onBatch = (t: unknown) => {
    const b = t as BatchTiming;
    if (b.job === REALTIME_DISPATCH_JOB) claims.push(b);
  };
  diagnostics_channel.subscribe(SEND_TIMING_CHANNEL, onSend);
  diagnostics_channel.subscribe(BATCH_TIMING_CHANNEL, onBatch);
  return {
    report() {
      diagnostics_channel.unsubscribe(SEND_TIMING_CHANNEL, onSend);
      diagnostics_channel.unsubscribe(BATCH_TIMING_CHANNEL, onBatch);
      const wake: number[] = [];
      const starts = claims.map((c) => c.claimStartedAt).sort((a, b) => a - b);
      let i = 0;
      for (const c of [...committedAt].sort((a, b) => a.at - b.at)) {
        while (i < starts.length && starts[i]! < c.at) i++;
        if (i < starts.length) for (let k = 0; k < c.sends; k++) wake.push(starts[i]! - c.at);
      }
      const perRow = (f: (b: BatchTiming) => number) => claims.flatMap((b) => Array<number>(b.rows).fill(f(b)));
      return {
        sendQueueWait: summary(wait),
        sendStatement: summary(statement),
        dispatcherWake: summary(wake),
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
