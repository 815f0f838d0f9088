/**
 * Coalesces concurrent calls into batches. At most `maxInFlight` batches run at once; calls that
 * arrive while they run wait, and go together (up to `maxBatch`) in the next one. A call that
 * finds a free slot goes at the end of the current turn of the event loop, with whatever arrived
 * in that turn, so light load adds no wait and heavy load builds bigger batches by itself.
 */

export type ItemResult<O> = { ok: true; value: O } | { ok: false; error: unknown };

export interface BatchQueueOptions<I, O> {
  maxBatch: number;
  maxInFlight: number;
  /** Most calls waiting for a slot; a call past it is refused at once with `whenFull()`, so a burst cannot queue without end. */
  maxWaiting?: number;
  whenFull?: () => Error;
  /** One result per item, in order; a rejection fails every item of the batch. */
  run(items: I[]): Promise<ItemResult<O>[]>;
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
  resolve(value: O): void;
  reject(error: unknown): void;
}

export function createBatchQueue<I, O>(opts: BatchQueueOptions<I, O>): BatchQueue<I, O> {
  if (!(opts.maxBatch >= 1 && opts.maxInFlight >= 1)) throw new Error('batch queue: maxBatch and maxInFlight must be at least 1');
  let queue: Waiter<I, O>[] = [];
  let inFlight = 0;
  let scheduled = false;

  function startBatches(): void {
    scheduled = false;
    while (inFlight < opts.maxInFlight && queue.length > 0) {
      const batch = queue.length <= opts.maxBatch ? queue : queue.slice(0, opts.maxBatch);
      queue = batch === queue ? [] : queue.slice(opts.maxBatch);
      inFlight++;
      void run(batch);
    }
  }

  async function run(batch: Waiter<I, O>[]): Promise<void> {
    try {
      const results = await opts.run(batch.map((w) => w.item));
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
      // Whatever queued up meanwhile goes now, together.
      startBatches();
    }
  }

  return {
    submit(item) {
      if (opts.maxWaiting !== undefined && queue.length >= opts.maxWaiting) {
        return Promise.reject(opts.whenFull?.() ?? new Error('batch queue: full'));
      }
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!scheduled && inFlight < opts.maxInFlight) {
          scheduled = true;
          setImmediate(startBatches);
        }
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
