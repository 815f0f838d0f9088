import { setTimeout as sleep } from 'node:timers/promises';
import type { Rng } from './seed.ts';
import type { Replica } from './stack.ts';

export interface KillLoopResult {
  kills: number;
  /** Per worker (in the order `progress` reports them): kills that cut a life in which it did work. */
  workingKills: number[];
  /** The replica started after the last kill, left running to drain the backlogs. */
  survivor: Replica;
  /** Uptime of each killed life, in ms after it answered /health/live (for the failure message). */
  uptimesMs: number[];
  /** How long each restart took to answer /health/live, in ms. */
  startsMs: number[];
}

/**
 * start → live a random while → SIGKILL → start again …, until every worker has been killed
 * `kills` times in a life in which it did work (its `progress` grew), or `maxLives` lives were
 * killed; then one last start that is left running. The first life is `first` (already started,
 * e.g. warmed up by the setup). A life's length is drawn from the seeded PRNG, so FAULT_SEED
 * replays the same kill schedule; where the kill lands inside the workers (mid-claim, mid-send,
 * mid-commit) is what the load makes of it.
 */
export async function killLoop(opts: {
  rng: Rng;
  kills: number;
  maxLives: number;
  first: Replica;
  start: (life: number) => Promise<Replica>;
  /** Inclusive range of a life, counted from the replica answering /health/live. */
  uptimeMs: [number, number];
  /** Each worker's work done so far (counts that only grow). */
  progress: () => Promise<number[]>;
}): Promise<KillLoopResult> {
  const uptimesMs: number[] = [];
  const startsMs: number[] = [];
  let current = opts.first;
  let atStart = await opts.progress();
  const workingKills = atStart.map(() => 0);
  let life = 0;
  while (life < opts.maxLives && workingKills.some((n) => n < opts.kills)) {
    life += 1;
    const uptime = opts.rng.int(opts.uptimeMs[0], opts.uptimeMs[1]);
    uptimesMs.push(uptime);
    await sleep(uptime);
    if (!current.alive()) throw new Error(`replica ${current.name} died on its own: ${current.service.log.stderr.slice(-2000)}`);
    const atKill = await opts.progress();
    await current.kill();
    atKill.forEach((n, i) => {
      if (Number(n) > Number(atStart[i])) workingKills[i]! += 1;
    });
    const t0 = Date.now();
    current = await opts.start(life);
    startsMs.push(Date.now() - t0);
    atStart = await opts.progress();
  }
  return { kills: life, workingKills, survivor: current, uptimesMs, startsMs };
}
