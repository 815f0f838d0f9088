import type { Db } from '../db/index.ts';
import type { Logger } from '../observability/logger.ts';
import type { Registry } from '../observability/metrics.ts';
import { newId, systemClock, type Clock } from '../time.ts';
import { createLockConnection } from './advisory-lock.ts';
import { createJobMetrics } from './job-metrics.ts';
import { leaseHolderId } from './lease.ts';
import { readJobStates, readPausedJobs, seedLastSuccess, setJobPaused, type JobPause } from './job-state.ts';
import { jobInfoOf, newJobSlot, scheduleSlot, settleRuns, slotsWokenBy, slotWakes, unscheduleSlot, type JobInfo, type JobSlot as Slot } from './job-slot.ts';
import { runJobOnce, skippedRun, type RunDeps, type RunResult } from './run-job.ts';
import { admit, shouldRerun, type Trigger } from './run-slot.ts';
import { jobDefinitionProblems } from './schedule.ts';
import type { JobDefinition } from './types.ts';
import { createWakeListener, type WakeListener } from './wake.ts';
import { JOBS_DEFAULTS } from './defaults.ts';

export interface JobRunnerOptions {
  /** For job_state writes and reads. */
  db: Db;
  /** For the runner's own dedicated connections: one for advisory locks, one for LISTEN. */
  databaseUrl: string;
  log: Logger;
  registry: Registry;
  clock?: Clock;
  /** How long stop() waits for aborted runs to return before closing connections anyway (runnerDefaults). */
  stopTimeoutMs?: number;
  /** How often a started runner reads which jobs are paused (job_state.paused_at; runnerDefaults). */
  pauseRefreshMs?: number;
}

export const runnerDefaults = {
  stopTimeoutMs: JOBS_DEFAULTS.runnerStopTimeoutMs,
  pauseRefreshMs: JOBS_DEFAULTS.runnerPauseRefreshMs,
} as const satisfies Required<Pick<JobRunnerOptions, 'stopTimeoutMs' | 'pauseRefreshMs'>>;

export type { JobInfo };

export interface JobRunner {
  register(job: JobDefinition): void;
  has(name: string): boolean;
  /** Starts timers and wake listening; resolves once LISTEN is in place. */
  start(): Promise<void>;
  /** Aborts running runs, waits for them to return, closes the runner's connections. */
  stop(): Promise<void>;
  /** One run now, under the same lock and no-overlap rules as a timer tick. */
  runNow(name: string): Promise<RunResult>;
  list(): Promise<JobInfo[]>;
  /**
   * Pauses (`pause`: who, why, expected end) or resumes (null) a job on every replica: stored in
   * job_state, read by each started runner every pauseRefreshMs; a run going when the pause is seen
   * is stopped between rows, and no run starts (timer, wake or runNow) until it is resumed (the
   * expected end only informs people and alerts: it resumes nothing).
   */
  setPaused(name: string, pause: JobPause | null): Promise<void>;
  /** This runner's name in the single-runner leases (hostname:pid:…): the replica's name in the ops console. */
  readonly holder: string;
  /** Backend pid of the advisory-lock connection (ops, tests), null when none is open. */
  lockConnectionPid(): number | null;
}

/** runNow of a name nobody registered. The ops route answers it as 404 JOB_NOT_FOUND (the runner knows no HTTP). */
export class UnknownJobError extends Error {
  readonly code = 'JOB_NOT_FOUND';
  constructor(name: string) {
    super(`no job named '${name}'`);
    this.name = 'UnknownJobError';
  }
}

export class InvalidJobError extends Error {
  constructor(name: string, problems: string[]) {
    super(`job '${name}' is invalid: ${problems.join('; ')}`);
    this.name = 'InvalidJobError';
  }
}

export function createJobRunner(opts: JobRunnerOptions): JobRunner {
  const log = opts.log.child({ component: 'job-runner' });
  const metrics = createJobMetrics(opts.registry);
  const locks = createLockConnection({ databaseUrl: opts.databaseUrl, log });
  const deps: RunDeps = { db: opts.db, locks, log: opts.log, metrics, clock: opts.clock ?? systemClock, holder: leaseHolderId() };
  const slots = new Map<string, Slot>();
  // The NOTIFY payload of owners that also wake their job in this process (JobDefinition.connectWake).
  const ownWakePayload = `runner:${newId()}`;
  let wake: WakeListener | null = null;
  let started = false;
  let stopping = false;
  let stopped: Promise<void> | null = null;
  let paused = new Map<string, Date | null>();
  let pauseTimer: NodeJS.Timeout | undefined;

  /** Reads the paused jobs; a run of a job paused since is stopped between rows. */
  async function refreshPauses(): Promise<void> {
    try {
      paused = await readPausedJobs(opts.db);
    } catch (err) {
      log.warn({ err }, 'paused jobs could not be read; keeping the last known set');
      return;
    }
    metrics.recordPauses(paused);
    for (const slot of slots.values()) if (paused.has(slot.job.name)) slot.stopCurrent?.abort(new Error('job paused by an operator'));
  }

  function launch(slot: Slot, trigger: Trigger): Promise<RunResult> {
    slot.running = true;
    slot.rerunRequested = false;
    const stop = new AbortController();
    slot.stopCurrent = stop;
    const run = runJobOnce(deps, slot.job, stop.signal, trigger, slotWakes(slot, () => stopping)).finally(() => {
      slot.running = false;
      slot.current = null;
      slot.stopCurrent = null;
      if (shouldRerun(slot, stopping)) fire(slot, 'wake');
    });
    slot.current = run;
    return run;
  }

  /** From timers and notifications: nobody awaits these, so nothing may reject. */
  function fire(slot: Slot, trigger: Trigger): void {
    if (paused.has(slot.job.name)) return;
    const admission = admit(slot, trigger, stopping);
    if (admission === 'rerun-after') {
      slot.rerunRequested = true;
      for (const onWake of [...slot.wakeListeners]) onWake();
    }
    if (admission !== 'start') return;
    launch(slot, trigger).catch((err: unknown) => log.error({ err, job: slot.job.name }, 'job run crashed'));
  }

  function wakeListener(): WakeListener {
    wake ??= createWakeListener({
      databaseUrl: opts.databaseUrl,
      log,
      onWake: (channel, payload) => {
        for (const slot of slotsWokenBy(slots.values(), channel, payload === ownWakePayload)) fire(slot, 'wake');
      },
      onReconnected: () => {
        for (const slot of slots.values()) if (slot.job.wakeChannel) fire(slot, 'wake');
      },
    });
    return wake;
  }

  /** Notifications sent while nobody listened are lost, so a wake job runs once when listening begins. */
  async function listenAndCatchUp(slot: Slot): Promise<void> {
    if (!slot.job.wakeChannel || stopping) return; // stop() may land while start() awaits
    await wakeListener().listen(slot.job.wakeChannel);
    fire(slot, 'wake');
  }

  return {
    register(job) {
      const problems = jobDefinitionProblems(job);
      if (slots.has(job.name)) problems.push('a job with this name is already registered');
      if (problems.length > 0) throw new InvalidJobError(job.name, problems);
      const slot = newJobSlot(job);
      slots.set(job.name, slot);
      job.connectWake?.(() => {
        if (started) fire(slot, 'wake');
      }, ownWakePayload);
      metrics.declare(job.name);
      if (started && !stopping) {
        scheduleSlot(slot, (trigger) => fire(slot, trigger));
        void listenAndCatchUp(slot);
      }
    },

    has: (name) => slots.has(name),

    async start() {
      if (started || stopping) return;
      started = true;
      for (const slot of slots.values()) scheduleSlot(slot, (trigger) => fire(slot, trigger));
      await seedLastSuccess(opts.db, [...slots.keys()], metrics, log);
      await refreshPauses();
      pauseTimer = setInterval(() => void refreshPauses(), opts.pauseRefreshMs ?? runnerDefaults.pauseRefreshMs);
      pauseTimer.unref();
      await Promise.all([...slots.values()].map(listenAndCatchUp));
      log.info({ jobs: [...slots.keys()] }, 'job runner started');
    },

    stop() {
      stopped ??= (async () => {
        stopping = true;
        clearInterval(pauseTimer);
        for (const slot of slots.values()) unscheduleSlot(slot);
        const running = [...slots.values()].filter((s) => s.current);
        for (const slot of running) slot.stopCurrent?.abort(new Error('job runner stopping'));
        const still = await settleRuns(running, opts.stopTimeoutMs ?? runnerDefaults.stopTimeoutMs);
        if (still.length > 0) log.warn({ jobs: still }, 'job runs ignored the stop signal; closing their connections anyway');
        await Promise.all([wake?.close(), locks.close()]);
        log.info('job runner stopped');
      })();
      return stopped;
    },

    async runNow(name) {
      const slot = slots.get(name);
      if (!slot) throw new UnknownJobError(name);
      // Read now, not from the last refresh: a runner that was never started (JOBS_ENABLED=false) has none.
      if ((await readPausedJobs(opts.db)).has(name)) return skippedRun('paused');
      const admission = admit(slot, 'manual', stopping);
      if (admission !== 'start') return skippedRun(stopping ? 'runner_stopped' : 'already_running');
      return launch(slot, 'manual');
    },

    async list() {
      const states = await readJobStates(opts.db, [...slots.keys()]);
      return [...slots.values()].map((slot) => jobInfoOf(slot, states.get(slot.job.name), stopping));
    },

    async setPaused(name, pause) {
      if (!slots.has(name)) throw new UnknownJobError(name);
      await setJobPaused(opts.db, name, pause, (opts.clock ?? systemClock).now());
      if (started && !stopping) await refreshPauses();
    },

    holder: deps.holder,
    lockConnectionPid: () => locks.backendPid(),
  };
}
