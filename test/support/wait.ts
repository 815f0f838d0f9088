import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` until it holds; fails naming `what` after `timeoutMs` (no fixed sleeps in tests). */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}
