/**
 * A fan-out worker in its own process, for access-fanout.crash.test.ts: it runs the queue and,
 * at the page and phase it is told, prints `PAUSED <page> <cursor>` and waits — for the test to
 * SIGKILL it. Env: CHILD_DB_URL, CHILD_CLOCK (ISO time), CHILD_BATCH, CHILD_LEASE_MS,
 * CHILD_STOP_PAGE, CHILD_STOP_PHASE (`committed`: right after the page's commit; `written`: inside
 * its transaction, before the commit).
 */
import { createPool } from '../../../../src/platform/db/index.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { accessFanOutJob, type PageInfo } from '../../../../src/modules/identity/access-fanout/access-fanout.job.ts';
import { defaultSettings, identityContext } from '../support.ts';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is unset`);
  return v;
};
const pool = createPool(env('CHILD_DB_URL'), 4);
const clock = new ManualClock(env('CHILD_CLOCK'));
const settings = defaultSettings({ batchSize: Number(env('CHILD_BATCH')), maxLeaseMs: Number(env('CHILD_LEASE_MS')) });
const ctx = identityContext(pool, clock, settings);
const stopPage = Number(env('CHILD_STOP_PAGE'));
const stopPhase = env('CHILD_STOP_PHASE');

let pages = 0;
const pause = async (phase: string, page: PageInfo) => {
  if (phase !== stopPhase || pages !== stopPage) return;
  process.stdout.write(`PAUSED ${pages} ${page.cursor}\n`);
  await new Promise(() => undefined); // until killed
};
const worker = accessFanOutJob({
  db: ctx.db,
  metrics: ctx.metrics,
  settings: settings.fanOut,
  testHooks: {
    pageWritten: async (page) => {
      pages += 1;
      await pause('written', page);
    },
    pageCommitted: (page) => pause('committed', page),
  },
});
await worker.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log: createLogger('silent'), now: () => clock.now() });
process.stdout.write('DONE\n');
await pool.end();
