/**
 * Preloaded into every test process (scripts/test.ts passes `--import` to node --test, which hands
 * it to each file's process). `--test-force-exit` ends a file's process as soon as its tests end,
 * and its report — written to stdout, a pipe to the runner — could still be queued: the runner then
 * silently counted fewer tests than ran, with exit code 0 (nodejs/node#64833; seen here: 20 of 28
 * tests of one file reported). With stdout blocking, each report chunk is written before the next
 * line of the process runs, so nothing is left queued at the exit.
 */
const handle = (process.stdout as unknown as { _handle?: { setBlocking?: (blocking: boolean) => void } })._handle;
handle?.setBlocking?.(true);
