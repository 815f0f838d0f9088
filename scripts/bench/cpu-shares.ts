/**
 * Where the machine's CPU went during a bench window (Linux /proc): this process's threads by role
 * (the server's main thread, named worker threads, the rest: libuv pool, GC helpers, …) and the
 * bench's PostgreSQL server with its backends. A bench on a 2-core machine shares the cores with its
 * own load generators and database, so "the server is CPU-bound" needs these figures beside it.
 *
 * A load generator belongs in its own process (cpuSecondsOfPid), not in a worker thread of the
 * server's: V8's helper threads (parallel scavenges, concurrent marking, compilation) serve every
 * isolate of a process, so a worker's garbage would be counted among the server's other threads.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** utime + stime of a /proc stat file, in seconds (or stime alone); 0 when it is gone. */
function cpuSecondsOf(statPath: string, only?: 'system'): number {
  try {
    const stat = readFileSync(statPath, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from #3 (state) on
    const system = Number(fields[12]);
    return (only === 'system' ? system : Number(fields[11]) + system) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

const ppidOf = (pid: string): string | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
  } catch {
    return undefined;
  }
};

/** The postmaster whose command line names `marker` (its data directory) and every child of it. */
function postgresPids(marker: string): string[] {
  const pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  const master = pids.find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  });
  return master ? [master, ...pids.filter((pid) => ppidOf(pid) === master)] : [];
}

/** utime + stime of every thread of a process so far, in seconds (0 when it is gone or unnamed). */
export const cpuSecondsOfPid = (pid: string | number | undefined): number => (pid === undefined ? 0 : cpuSecondsOf(`/proc/${pid}/stat`));

export interface CpuSnapshot {
  at: number;
  threads: Map<string, number>;
  /** Kernel-mode seconds of this process's main thread (syscalls: socket writes and reads), a part of its total. */
  mainSystem: number;
  postgres: Map<string, number>;
}

export function cpuSnapshot(postgresMarker: string): CpuSnapshot {
  const threads = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) threads.set(tid, cpuSecondsOf(`/proc/self/task/${tid}/stat`));
  const postgres = new Map<string, number>();
  for (const pid of postgresPids(postgresMarker)) postgres.set(pid, cpuSecondsOf(`/proc/${pid}/stat`));
  return { at: performance.now(), threads, mainSystem: cpuSecondsOf(`/proc/self/task/${process.pid}/stat`, 'system'), postgres };
}

/**
 * CPU seconds per role between two snapshots, and as cores busy on average over the window.
 * `roles` names thread ids (the main thread's id is the pid); unnamed threads are `otherThreads`.
 * `reported` adds roles measured elsewhere, in seconds (other processes).
 * Every role counts user and kernel time; `kernelOfMainThread` is the kernel part of the main
 * thread's figure, already in it (never add the two), and stays out of `total`.
 */
export function cpuShares(
  before: CpuSnapshot,
  after: CpuSnapshot,
  roles: Record<string, string | undefined>,
  reported: Record<string, number> = {},
): Record<string, number> {
  const seconds = Math.max(0.001, (after.at - before.at) / 1000);
  const delta = (a: Map<string, number>, b: Map<string, number>, id: string) => (a.get(id) ?? 0) - (b.get(id) ?? 0);
  const out: Record<string, number> = {};
  const named = new Set<string>();
  for (const [role, tid] of Object.entries(roles)) {
    if (!tid) continue;
    named.add(tid);
    out[role] = delta(after.threads, before.threads, tid);
  }
  for (const [role, seconds] of Object.entries(reported)) out[role] = seconds;
  out.otherThreads = [...after.threads.keys()].filter((t) => !named.has(t)).reduce((s, t) => s + delta(after.threads, before.threads, t), 0);
  out.kernelOfMainThread = after.mainSystem - before.mainSystem;
  out.postgres = [...after.postgres.keys()].reduce((s, p) => s + delta(after.postgres, before.postgres, p), 0);
  const total = Object.entries(out).reduce((s, [k, v]) => (k === 'kernelOfMainThread' ? s : s + v), 0);
  const round = (v: number) => Math.round(v * 100) / 100;
  return { windowSeconds: round(seconds), ...Object.fromEntries(Object.entries(out).map(([k, v]) => [k, round(v / seconds)])), total: round(total / seconds) };
}
