import diagnostics_channel from 'node:diagnostics_channel';

/**
 * Coalesces concurrent calls into batches. At most `maxInFlight` batches run at once; calls that
 * arrive while they run wait, and go together (up to `maxBatch`) in the next one. A call that
 * finds a free slot goes at the end of the current turn of the event loop, with whatever arrived
 * in that turn, so light load adds no wait and heavy load builds bigger batches by itself;
 * `minIntervalMs` spaces the starts of a steady stream's batches.
 */

export type ItemResult<O> = { ok: true; value: O } | { ok: false; error: unknown };

export interface BatchQueueOptions<I, O> {
  maxBatch: number;
  maxInFlight: number;
  /**
   * Batches start at most this often while calls keep coming (sooner only once maxBatch calls
   * wait), so a steady stream goes in fewer, larger batches; a call after a quiet spell goes at
   * the end of the turn. 0 (batchQueueDefaults): every free slot starts a batch at once.
   */
  minIntervalMs?: number;
  /** A diagnostics_channel name each batch's BatchQueueTiming goes to (a benchmark's breakdown of where a call's time went). */
  timingChannel?: string;
  /** Most calls waiting for a slot; a call past it is refused at once with `whenFull()`, so a burst cannot queue without end. */
  maxWaiting?: number;
  whenFull?: () => Error;
  /** One result per item, in order; a rejection fails every item of the batch. */
  run(items: I[]): Promise<ItemResult<O>[]>;
}

export const batchQueueDefaults = { minIntervalMs: 0 } as const;

/** A batch's timing, published on the queue's `timingChannel` while someone subscribes; times from `performance.now()`. */
export interface BatchQueueTiming {
  /** When each item of the batch was submitted. */
  submittedAt: number[];
  startedAt: number;
  /** `run` returned (for the send statement: committed, its rows back). */
  endedAt: number;
}

export interface BatchQueue<I, O> {
  submit(item: I): Promise<O>;
  /** Calls waiting for a slot (metrics, tests). */
  readonly waiting: number;
  /** Batches running now. */
  readonly inFlight: number;
}

interface Waiter<I, O> {
  item: I;
  submittedAt: number;
  resolve(value: O): void;
  reject(error: unknown): void;
}

export function createBatchQueue<I, O>(opts: BatchQueueOptions<I, O>): BatchQueue<I, O> {
  if (!(opts.maxBatch >= 1 && opts.maxInFlight >= 1)) throw new Error('batch queue: maxBatch and maxInFlight must be at least 1');
  let queue: Waiter<I, O>[] = [];
  let inFlight = 0;
  let scheduled = false;
  let held: NodeJS.Timeout | undefined;
  let lastStart = -Infinity;
  const minIntervalMs = opts.minIntervalMs ?? batchQueueDefaults.minIntervalMs;
  const timings = opts.timingChannel === undefined ? undefined : diagnostics_channel.channel(opts.timingChannel);

  /**
   * Starts batches now (`now`) or at the end of this turn, or once minIntervalMs has passed since
   * the last start; a full batch does not wait for the interval.
   */
  function schedule(now = false): void {
    if (scheduled || inFlight >= opts.maxInFlight || queue.length === 0) return;
    const wait = queue.length >= opts.maxBatch ? 0 : lastStart + minIntervalMs - performance.now();
    if (wait > 0) {
      held ??= setTimeout(startBatches, wait);
      return;
    }
    if (now) return startBatches();
    scheduled = true;
    setImmediate(startBatches);
  }

  function startBatches(): void {
    scheduled = false;
    clearTimeout(held);
    held = undefined;
    while (inFlight < opts.maxInFlight && queue.length > 0) {
      lastStart = performance.now();
      const batch = queue.length <= opts.maxBatch ? queue : queue.slice(0, opts.maxBatch);
      queue = batch === queue ? [] : queue.slice(opts.maxBatch);
      inFlight++;
      void run(batch);
    }
  }

  async function run(batch: Waiter<I, O>[]): Promise<void> {
    try {
      const startedAt = performance.now();
      const results = await opts.run(batch.map((w) => w.item));
      if (timings?.hasSubscribers) {
        const timing: BatchQueueTiming = { submittedAt: batch.map((w) => w.submittedAt), startedAt, endedAt: performance.now() };
        timings.publish(timing);
      }
      batch.forEach((w, i) => {
        const r = results[i];
        if (!r) w.reject(new Error('batch queue: no result for this item'));
        else if (r.ok) w.resolve(r.value);
        else w.reject(r.error);
      });
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      inFlight--;
      // Whatever queued up meanwhile goes together, as soon as the interval allows.
      schedule(true);
    }
  }

  return {
    submit(item) {
      if (opts.maxWaiting !== undefined && queue.length >= opts.maxWaiting) {
        return Promise.reject(opts.whenFull?.() ?? new Error('batch queue: full'));
      }
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, submittedAt: performance.now(), resolve, reject });
        schedule();
      });
    },
    get waiting() {
      return queue.length;
    },
    get inFlight() {
      return inFlight;
    },
  };
}
