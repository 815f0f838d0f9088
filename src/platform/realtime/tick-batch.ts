/**
 * Coalesces lookups made in one turn of the event loop into one call of `load`: a reconnect storm
 * brings hundreds of connects per second, and one query for every connect of a turn costs the
 * server and PostgreSQL a fraction of one query each. Nothing is cached: every lookup is answered
 * by a `load` that started after it was asked, so an answer is never older than the question (no
 * invalidation to get wrong). The batch runs at setImmediate, after the I/O callbacks of the
 * current turn, so a busier loop makes bigger batches. A failing `load` rejects every lookup of its
 * batch; past `maxBatch` keys a batch is cut into several calls.
 */
export function tickBatcher<K, V>(load: (keys: K[]) => Promise<Map<K, V>>, opts: { maxBatch?: number; missing: V }): (key: K) => Promise<V> {
  const maxBatch = opts.maxBatch ?? 500;
  let pending: Map<K, { resolve(v: V): void; reject(err: unknown): void }[]> | undefined;

  const run = (batch: Map<K, { resolve(v: V): void; reject(err: unknown): void }[]>) => {
    const keys = [...batch.keys()];
    for (let i = 0; i < keys.length; i += maxBatch) {
      const slice = keys.slice(i, i + maxBatch);
      load(slice).then(
        (found) => {
          for (const key of slice) for (const w of batch.get(key)!) w.resolve(found.has(key) ? found.get(key)! : opts.missing);
        },
        (err: unknown) => {
          for (const key of slice) for (const w of batch.get(key)!) w.reject(err);
        },
      );
    }
  };

  return (key) =>
    new Promise<V>((resolve, reject) => {
      if (!pending) {
        const batch = (pending = new Map());
        setImmediate(() => {
          pending = undefined;
          run(batch);
        });
      }
      const waiting = pending.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else pending.set(key, [{ resolve, reject }]);
    });
}
