import type { Logger } from '../observability/logger.ts';
import { withTimeout } from '../time.ts';
import type { ConsumerMetrics } from './consumer-metrics.ts';
import { errorSummary } from './errors.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';

/**
 * Consumer lag read from the broker on a timer, so it shows a consumer that makes no progress at
 * all (a handler blocked, a partition in backoff, a consumer that crashed or never got its
 * partitions): the runner's own update happens only when it commits something.
 *
 * Per consumer group and partition: consumer_lag = high watermark − committed offset (no commit
 * yet, or one below the log start: the log start offset, where the group starts reading).
 *
 * consumer_oldest_unconsumed_age_seconds: each poll keeps (time, high watermark) whenever the
 * high watermark moved; the message at the committed offset was written before the first poll
 * that saw the high watermark above it, so now − that poll's time is its age, to within one poll
 * interval and never more than the truth (a backlog already waiting when this process started is
 * counted from its first poll). This costs nothing beyond the two offset requests the lag needs;
 * reading the message's own timestamp would mean a fetch per lagging partition, which kafkajs's
 * admin client cannot do. Every replica reports the group's numbers for every partition (the
 * same values): aggregate with max by (consumer, partition), not sum.
 */

/** The two reads the poller needs; kafkajs's Admin has them, platformatic-admin.ts adapts the other client's. */
export interface LagAdmin {
  fetchTopicOffsets(topic: string): Promise<{ partition: number; low: string; high: string }[]>;
  fetchOffsets(o: { groupId: string; topics: string[] }): Promise<{ partitions: { partition: number; offset: string }[] }[]>;
}

export interface LagTarget {
  name: string;
  topic: string;
  physicalTopic: string;
  groupId: string;
  metrics: ConsumerMetrics;
}

interface PartitionState {
  /** The next offset the group will read. */
  next: number;
  high: number;
  /** (time, high watermark) when the high watermark was first seen at that value, oldest first. */
  samples: { atMs: number; high: number }[];
}

export interface LagPollerOptions {
  admin(): Promise<LagAdmin>;
  /** Called after a failed poll: the next one starts from a fresh admin connection. */
  resetAdmin(): void;
  intervalMs: number;
  /** Longest one poll may take (a silent broker never piles polls up). */
  timeoutMs: number;
  log: Logger;
  now?: () => number;
}

export function createLagPoller(opts: LagPollerOptions) {
  const now = opts.now ?? Date.now;
  const log = opts.log.child({ component: 'consumer-lag' });
  const targets = new Map<LagTarget, Map<number, PartitionState>>();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let failing = false;
  let stopped = false;

  function observe(state: Map<number, PartitionState>, partition: number, high: number, next: number, atMs: number): void {
    let p = state.get(partition);
    if (!p) state.set(partition, (p = { next, high, samples: [] }));
    p.next = next;
    p.high = high;
    const last = p.samples.at(-1);
    if (!last || high > last.high) p.samples.push({ atMs, high });
    // Only the first sample above the committed offset dates the head; keep the newest one
    // anyway, so the next message's arrival is dated from the poll that first sees it.
    while (p.samples.length > 1 && p.samples[1]!.high <= next) p.samples.shift();
    if (p.samples.length > EVENTS_DEFAULTS.kafkaLagMaxSamples) p.samples.splice(1, 1);
  }

  /** Sets both gauges of a target from its last known partition states, with ages as of `atMs`. */
  function report(target: LagTarget, state: Map<number, PartitionState>, atMs: number): void {
    let oldestMs = 0;
    for (const [partition, p] of state) {
      const lag = Math.max(0, p.high - p.next);
      target.metrics.lag.set({ consumer: target.name, topic: target.topic, partition: String(partition) }, lag);
      if (lag === 0) continue;
      const dated = p.samples.find((s) => s.high > p.next);
      if (dated) oldestMs = Math.max(oldestMs, atMs - dated.atMs);
    }
    target.metrics.oldestUnconsumedAge.set({ consumer: target.name, topic: target.topic }, oldestMs / 1000);
  }

  async function pollTarget(admin: LagAdmin, target: LagTarget, state: Map<number, PartitionState>): Promise<void> {
    const [watermarks, [committed]] = await Promise.all([
      admin.fetchTopicOffsets(target.physicalTopic),
      admin.fetchOffsets({ groupId: target.groupId, topics: [target.physicalTopic] }),
    ]);
    const atMs = now();
    const committedOf = new Map((committed?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    for (const w of watermarks) {
      const low = Number(w.low);
      const c = committedOf.get(w.partition) ?? -1;
      observe(state, w.partition, Number(w.high), c >= low ? c : low, atMs);
    }
    report(target, state, atMs);
  }

  async function pollOnce(): Promise<void> {
    try {
      await withTimeout(
        (async () => {
          const admin = await opts.admin();
          for (const [target, state] of targets) await pollTarget(admin, target, state);
        })(),
        opts.timeoutMs,
        'consumer lag poll',
      );
      if (failing) log.info('consumer lag poll recovered');
      failing = false;
    } catch (err) {
      if (stopped) return;
      opts.resetAdmin();
      // The lag keeps its last values; the ages keep growing from what was last seen, so a
      // consumer stuck behind a broker outage still trips the age alert.
      const atMs = now();
      for (const [target, state] of targets) report(target, state, atMs);
      if (!failing) {
        log.warn({ err: errorSummary(err), targets: targets.size }, 'consumer lag poll failed: consumer_lag keeps its last values until the broker answers');
      }
      failing = true;
    }
  }

  function tick(): void {
    if (inFlight || stopped || targets.size === 0) return;
    inFlight = pollOnce().finally(() => {
      inFlight = undefined;
    });
  }

  return {
    /** Starts reporting a consumer's lag; the returned function stops it. */
    track(target: LagTarget): () => void {
      targets.set(target, new Map());
      timer ??= setInterval(tick, opts.intervalMs).unref();
      return () => void targets.delete(target);
    },
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await inFlight;
    },
  };
}
