import { Cron } from 'croner';
import type { JobStateRow } from './job-state.ts';
import type { RunResult } from './run-job.ts';
import type { RunSlot, Trigger } from './run-slot.ts';
import type { RunWakes } from './run-wakes.ts';
import { describeSchedule, lockKeyOf } from './schedule.ts';
import { lockTtlOf } from './lock-deadline.ts';
import type { JobDefinition } from './types.ts';

/**
 * One registered job in one process: its timer, its run in flight and the runs waiting for a wake.
 * The runner (runner.ts) owns the slots; this file holds what a slot does on its own — its timer
 * and how it reads in the ops listing.
 */
export interface JobSlot extends RunSlot {
  job: JobDefinition;
  /** Runs waiting for the next wake (ctx.waitForWake). */
  wakeListeners: Set<() => void>;
  current: Promise<RunResult> | null;
  stopCurrent: AbortController | null;
  timer?: NodeJS.Timeout;
  cron?: Cron;
  nextTickAt: Date | null;
}

export const newJobSlot = (job: JobDefinition): JobSlot => ({
  job,
  running: false,
  rerunRequested: false,
  wakeListeners: new Set(),
  current: null,
  stopCurrent: null,
  nextTickAt: null,
});

/**
 * The wakes a run of the slot sees: a wake that arrives during the run is handed to the run when it
 * asks (ctx.woken(), ctx.waitForWake()), instead of a rerun after it — the run goes on without
 * another lock, job_state write and start.
 */
export function slotWakes(slot: JobSlot, stopping: () => boolean): RunWakes {
  return {
    take() {
      if (!slot.rerunRequested || stopping()) return false;
      slot.rerunRequested = false;
      return true;
    },
    listen(onWake) {
      slot.wakeListeners.add(onWake);
      return () => slot.wakeListeners.delete(onWake);
    },
  };
}

/**
 * The slots a NOTIFY on `channel` wakes. A notification its owner sent with this runner's own
 * payload woke the jobs it connectWake'd in this process already; other jobs on the channel wake.
 */
export function slotsWokenBy(slots: Iterable<JobSlot>, channel: string, ownPayload: boolean): JobSlot[] {
  return [...slots].filter((s) => s.job.wakeChannel === channel && !(ownPayload && s.job.connectWake));
}

/** Starts the slot's timer: `fire` on every tick. */
export function scheduleSlot(slot: JobSlot, fire: (trigger: Trigger) => void): void {
  const { job } = slot;
  if (job.every !== undefined) {
    // Our own interval rather than croner's: croner counts whole seconds, and jobs like the
    // realtime dispatcher tick faster than that.
    const every = job.every;
    slot.nextTickAt = new Date(Date.now() + every);
    slot.timer = setInterval(() => {
      slot.nextTickAt = new Date(Date.now() + every);
      fire('tick');
    }, every);
    slot.timer.unref();
  } else {
    slot.cron = new Cron(job.cron!, { timezone: 'UTC', unref: true }, () => fire('tick'));
  }
}

export function unscheduleSlot(slot: JobSlot): void {
  clearInterval(slot.timer);
  slot.cron?.stop();
  slot.nextTickAt = null;
}

export interface JobInfo extends Omit<JobStateRow, 'name'> {
  name: string;
  schedule: { every?: number; cron?: string; description: string };
  singleRunner: boolean;
  /** The single-runner lock's key (platform.job_leases.name); null for a job every replica runs. */
  lockKey: string | null;
  /** How long a run holds that lock at most (its LockTtl: given, or derived from maxRunMs); null without a lock. */
  lockTtlMs: number | null;
  wakeChannel: string | null;
  /** A run of this job is going in this process (this replica). */
  running: boolean;
  /** Next timer tick in this process; null before start() and after stop(). */
  nextRunAt: Date | null;
}

/** The ops listing of one job: its definition, this process's timer and run, and its stored state. */
export function jobInfoOf({ job, running, cron, nextTickAt }: JobSlot, state: JobStateRow | undefined, stopping: boolean): JobInfo {
  return {
    name: job.name,
    schedule: {
      ...(job.every === undefined ? {} : { every: job.every }),
      ...(job.cron === undefined ? {} : { cron: job.cron }),
      description: describeSchedule(job),
    },
    singleRunner: job.singleRunner === true,
    lockKey: job.singleRunner === true ? lockKeyOf(job) : null,
    lockTtlMs: job.singleRunner === true ? lockTtlOf(job) : null,
    wakeChannel: job.wakeChannel ?? null,
    running,
    nextRunAt: cron ? (stopping ? null : cron.nextRun()) : nextTickAt,
    lastRunAt: state?.lastRunAt ?? null,
    lastSuccessAt: state?.lastSuccessAt ?? null,
    lastOutcome: state?.lastOutcome ?? null,
    lastCounts: state?.lastCounts ?? null,
    lastDurationMs: state?.lastDurationMs ?? null,
    lastError: state?.lastError ?? null,
    runsTotal: state?.runsTotal ?? 0,
    failuresTotal: state?.failuresTotal ?? 0,
    recentRuns: state?.recentRuns ?? [],
    pausedAt: state?.pausedAt ?? null,
    pausedBy: state?.pausedBy ?? null,
    pauseReason: state?.pauseReason ?? null,
    pauseUntil: state?.pauseUntil ?? null,
  };
}

/** Waits for the runs to return, at most `timeoutMs`: the names of those still running then. */
export async function settleRuns(slots: readonly JobSlot[], timeoutMs: number): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    Promise.allSettled(slots.map((s) => s.current)).then(() => false),
    new Promise<boolean>((resolve) => (timer = setTimeout(resolve, timeoutMs, true))),
  ]);
  clearTimeout(timer);
  return timedOut ? slots.filter((s) => s.current).map((s) => s.job.name) : [];
}
