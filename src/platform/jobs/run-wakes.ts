/**
 * Wakes that reach a run while it is going. The runner remembers a wake that arrives during a run
 * as one "run again right after" (run-slot.ts); a run may instead take it itself (ctx.woken()) or
 * wait for the next one (ctx.waitForWake()) and carry on, so a job that drains a queue as rows
 * are committed does not end and start again, with a lock round trip and a job_state write each
 * time, for every commit.
 */
export interface RunWakes {
  /** Takes a wake that arrived meanwhile, if any (it then starts no rerun). */
  take(): boolean;
  /** Calls `onWake` at the next wake; returns the unsubscribe function. */
  listen(onWake: () => void): () => void;
}

/** No wakes ever (jobs run outside the runner, or by hand in tests). */
export const noWakes: RunWakes = { take: () => false, listen: () => () => {} };

/**
 * Resolves true when a wake is taken (one that already arrived, or the next within `timeoutMs`),
 * false when the time is up or `signal` aborts first.
 */
export function waitForWake(wakes: RunWakes, signal: AbortSignal, timeoutMs: number): Promise<boolean> {
  if (wakes.take()) return Promise.resolve(true);
  if (signal.aborted || timeoutMs <= 0) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const finish = (woke: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      unsubscribe();
      resolve(woke && wakes.take());
    };
    const onAbort = () => finish(false);
    const timer = setTimeout(() => finish(false), timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });
    const unsubscribe = wakes.listen(() => finish(true));
  });
}
