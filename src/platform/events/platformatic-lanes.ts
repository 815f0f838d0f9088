import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../observability/logger.ts';
import type { IncomingMessage } from './bus.ts';
import type { MessageProcessor } from './consumer-runner.ts';

/**
 * The partitions of a @platformatic/kafka consumer (platformatic-consumer.ts) as lanes: the library
 * hands over one stream of every assigned partition's records, with no pause or seek per partition,
 * so each partition gets its own queue here, run in order, at most `partitionsConcurrently` at once,
 * in chunks of one transaction each. A failed message holds its lane (only) for its backoff and is
 * tried again from the queue, so order within the partition holds and the other partitions keep
 * flowing. Offsets are committed once their transactions committed, one commit in flight per
 * partition (the latest offset wins), never awaited by the lane.
 */

export interface Commit {
  partition: number;
  offset: bigint;
  leaderEpoch: number;
}

export interface LaneDeps {
  processor: MessageProcessor;
  log: Logger;
  /** Sends one offset commit; a failure is logged at debug (the inbox turns a redelivery into a skip). */
  commit(c: Commit): Promise<void>;
  /** Offset after the last record the library fetched of a partition (past transaction markers), if known. */
  fetchedEnd(partition: number): bigint | undefined;
  /** True while records may still wait in the library's buffer: then the fetched end is not all handed over. */
  buffered(): boolean;
}

interface Lane {
  queue: IncomingMessage[];
  /** Offset after the last record queued; a record below it is a redelivery after a rebalance, dropped. */
  expected: bigint | undefined;
  /** Offset after the last record handled (its transaction committed). */
  handled: bigint | undefined;
  leaderEpoch: number;
  running: boolean;
  /** Committed, or being committed. */
  committed: bigint | undefined;
  committing: boolean;
}

export function createLanes(deps: LaneDeps) {
  const { processor, log } = deps;
  const def = processor.consumer;
  const lanes = new Map<number, Lane>();
  let halt = new AbortController();
  let slots = def.partitionsConcurrently;
  const waiting: (() => void)[] = [];
  /** Woken whenever a lane handled something, stopped, or a commit ended. */
  let wakers: (() => void)[] = [];
  const wake = (): void => {
    const w = wakers;
    wakers = [];
    for (const f of w) f();
  };
  const woken = (maxMs: number) =>
    new Promise<void>((resolve) => {
      wakers.push(resolve);
      setTimeout(resolve, maxMs).unref();
    });
  let queued = 0;

  const acquire = async (): Promise<void> => {
    if (slots > 0) return void slots--;
    await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else slots++;
  };

  function laneOf(partition: number): Lane {
    let lane = lanes.get(partition);
    if (!lane) lanes.set(partition, (lane = { queue: [], expected: undefined, handled: undefined, leaderEpoch: -1, running: false, committed: undefined, committing: false }));
    return lane;
  }

  /** One commit in flight per partition; the newest offset goes next. */
  function commitLater(partition: number, lane: Lane, offset: bigint): void {
    if (lane.committed !== undefined && offset <= lane.committed) return;
    lane.committed = offset;
    if (lane.committing) return;
    lane.committing = true;
    void (async () => {
      let sent: bigint | undefined;
      while (lane.committed !== undefined && lane.committed !== sent) {
        sent = lane.committed;
        await deps.commit({ partition, offset: sent, leaderEpoch: lane.leaderEpoch }).catch((err: unknown) => {
          log.debug({ err: { message: (err as Error).message }, partition }, 'offset commit failed; a redelivery is skipped by the inbox');
        });
      }
      lane.committing = false;
      wake();
    })();
  }

  async function run(partition: number, lane: Lane, signal: AbortSignal): Promise<void> {
    try {
      let attempt = 0;
      while (lane.queue.length > 0 && !signal.aborted) {
        await acquire();
        let result;
        const chunk = lane.queue.slice(0, def.maxMessagesPerTransaction);
        try {
          if (signal.aborted) break;
          result = await processor.processBatch(chunk);
        } finally {
          release();
        }
        if (lane.queue[0] !== chunk[0]) continue; // the partition was revoked meanwhile
        if (result.done > 0) {
          attempt = 0;
          const next = BigInt(chunk[result.done - 1]!.offset) + 1n;
          lane.queue.splice(0, result.done);
          queued -= result.done;
          lane.handled = next;
          processor.reportLag(partition, Number(next) + lane.queue.length, Number(next));
          commitLater(partition, lane, next);
          wake();
        }
        if (result.error !== undefined) {
          attempt = result.attempt ?? attempt + 1;
          const delay = processor.retryDelay(lane.queue[0]!, result.error, attempt);
          await sleep(delay, undefined, { signal }).catch(() => undefined);
        }
      }
      // All handed over and handled: move past the transaction markers that end the partition too, so
      // the committed offset reaches the end of the log (consumer_lag back to 0).
      const end = deps.fetchedEnd(partition);
      if (lane.queue.length === 0 && !deps.buffered() && end !== undefined && lane.handled !== undefined && end > lane.handled) {
        lane.handled = end;
        commitLater(partition, lane, end);
      }
    } finally {
      lane.running = false;
      wake();
    }
  }

  return {
    /** Records waiting or being handled, over every lane (the caller's backpressure). */
    queued: () => queued,
    push(m: IncomingMessage, leaderEpoch: number): void {
      const lane = laneOf(m.partition);
      const offset = BigInt(m.offset);
      if (lane.expected !== undefined && offset < lane.expected) return;
      lane.expected = offset + 1n;
      lane.leaderEpoch = leaderEpoch;
      lane.queue.push(m);
      queued++;
      if (lane.running) return;
      lane.running = true;
      // Started on the next turn, not now: the library pushes a whole fetch's records at once, and
      // the lane's first transaction should take all of its partition's, not the first record alone.
      const signal = halt.signal;
      setImmediate(() => void run(m.partition, lane, signal));
    },
    /** After a rebalance: lanes of partitions no longer assigned drop what they hold. */
    keepOnly(partitions: ReadonlySet<number>): void {
      for (const [partition, lane] of lanes) {
        if (partitions.has(partition)) continue;
        queued -= lane.queue.length;
        lane.queue = [];
        lane.expected = lane.handled = lane.committed = undefined;
      }
    },
    /** Ends every lane's backoff and waits until no lane runs and no commit is in flight; then forgets them all. */
    async drain(): Promise<void> {
      halt.abort();
      const busy = () => [...lanes.values()].some((l) => l.running || l.committing);
      while (busy()) await woken(100);
      lanes.clear();
      queued = 0;
      halt = new AbortController();
    },
    /** Resolves once fewer than `limit` records wait (or the lanes are drained). */
    async below(limit: number): Promise<void> {
      while (queued >= limit && !halt.signal.aborted) await woken(50);
    },
  };
}
