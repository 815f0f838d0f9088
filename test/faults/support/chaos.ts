import { setTimeout as sleep } from 'node:timers/promises';
import type { Rng } from './seed.ts';
import type { Replica } from './stack.ts';

export interface KillLoopResult {
  kills: number;
  /** The replica started after the last kill, left running to drain the backlogs. */
  survivor: Replica;
  /** Uptime of each killed life, in ms after it answered /health/live (for the failure message). */
  uptimesMs: number[];
  /** How long each restart took to answer /health/live, in ms. */
  startsMs: number[];
}

/**
 * start → live a random while → SIGKILL → start again …, `kills` times, then one last start that
 * is left running. The first life is `first` (already started, e.g. warmed up by the setup). A
 * life's length is drawn from the seeded PRNG, so FAULT_SEED replays the same kill schedule; where
 * the kill lands inside the workers (mid-claim, mid-send, mid-commit) is what the load makes of it.
 */
export async function killLoop(opts: {
  rng: Rng;
  kills: number;
  first: Replica;
  start: (life: number) => Promise<Replica>;
  /** Inclusive range of a life, counted from the replica answering /health/live. */
  uptimeMs: [number, number];
}): Promise<KillLoopResult> {
  const uptimesMs: number[] = [];
  const startsMs: number[] = [];
  let current = opts.first;
  for (let life = 1; life <= opts.kills; life++) {
    const uptime = opts.rng.int(opts.uptimeMs[0], opts.uptimeMs[1]);
    uptimesMs.push(uptime);
    await sleep(uptime);
    if (!current.alive()) throw new Error(`replica ${current.name} died on its own: ${current.service.log.stderr.slice(-2000)}`);
    await current.kill();
    const t0 = Date.now();
    current = await opts.start(life);
    startsMs.push(Date.now() - t0);
  }
  return { kills: opts.kills, survivor: current, uptimesMs, startsMs };
}
