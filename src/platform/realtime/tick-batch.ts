import { REALTIME_DEFAULTS } from './defaults.ts';
export interface TickBatcherOptions<V> {
  /** Keys per call of `load`; a bigger batch is cut into several calls, run together. Default 500. */
  maxBatch?: number;
  /** The answer for a key `load` left out of its map. */
  missing: V;
}

/** What each TickBatcherOptions field left out means. */
const defaults = { maxBatch: REALTIME_DEFAULTS.hubTickBatchMax } as const;

/**
 * Coalesces lookups into few calls of `load`: a reconnect storm brings thousands of connects a
 * second, and one query for many connects costs the server and PostgreSQL a fraction of one query
 * each. Lookups asked in one turn of the event loop go together (the batch starts at setImmediate,
 * after the turn's I/O callbacks), and while a load runs, new lookups wait for it to finish and then
 * go together in the next: at low load a lookup waits for nothing, and under load batches grow
 * with the arrival rate times the query's time instead of queries piling up.
 *
 * Nothing is cached: every lookup is answered by a load that started after it was asked, so an
 * answer is never older than its question (no invalidation to get wrong). A failing load rejects
 * the lookups of its batch; past `maxBatch` keys a batch is cut into several calls, run together.
 * A load that hangs holds the lookups queued behind it until it fails (a database read ends at
 * the pool's statement timeout), as each of them would have waited on its own query before.
 */
export function tickBatcher<K, V>(load: (keys: K[]) => Promise<Map<K, V>>, opts: TickBatcherOptions<V>): (key: K) => Promise<V> {
  type Waiter = { resolve(v: V): void; reject(err: unknown): void };
  const maxBatch = opts.maxBatch ?? defaults.maxBatch;
  let pending = new Map<K, Waiter[]>();
  let scheduled = false;
  let running = false;

  const answer = async (keys: K[], batch: Map<K, Waiter[]>) => {
    try {
      const found = await load(keys);
      for (const key of keys) for (const w of batch.get(key)!) w.resolve(found.has(key) ? found.get(key)! : opts.missing);
    } catch (err) {
      for (const key of keys) for (const w of batch.get(key)!) w.reject(err);
    }
  };

  const flush = () => {
    if (running || pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    running = true;
    const keys = [...batch.keys()];
    const slices: Promise<void>[] = [];
    for (let i = 0; i < keys.length; i += maxBatch) slices.push(answer(keys.slice(i, i + maxBatch), batch));
    void Promise.all(slices).then(() => {
      running = false;
      flush(); // the lookups that arrived meanwhile
    });
  };

  return (key) =>
    new Promise<V>((resolve, reject) => {
      const waiting = pending.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else pending.set(key, [{ resolve, reject }]);
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        flush();
      });
    });
}
