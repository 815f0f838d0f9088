import { Cron } from 'croner';
import type { Db } from '../db/index.ts';
import { AppError } from '../http/errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { Registry } from '../observability/metrics.ts';
import { newId, systemClock, type Clock } from '../time.ts';
import { createLockConnection } from './advisory-lock.ts';
import { createJobMetrics } from './job-metrics.ts';
import { leaseHolderId } from './lease.ts';
import { readJobStates, type JobStateRow } from './job-state.ts';
import { runJobOnce, skippedRun, type RunDeps, type RunResult } from './run-job.ts';
import { admit, shouldRerun, type RunSlot, type Trigger } from './run-slot.ts';
import type { RunWakes } from './run-wakes.ts';
import { describeSchedule, jobDefinitionProblems } from './schedule.ts';
import type { JobDefinition } from './types.ts';
import { createWakeListener, type WakeListener } from './wake.ts';

export interface JobRunnerOptions {
  /** For job_state writes and reads. */
  db: Db;
  /** For the runner's own dedicated connections: one for advisory locks, one for LISTEN. */
  databaseUrl: string;
  log: Logger;
  registry: Registry;
  clock?: Clock;
  /** How long stop() waits for aborted runs to return before closing connections anyway. Default 5000. */
  stopTimeoutMs?: number;
}

export interface JobInfo extends Omit<JobStateRow, 'name'> {
  name: string;
  schedule: { every?: number; cron?: string; description: string };
  singleRunner: boolean;
  wakeChannel: string | null;
  /** A run of this job is going in this process (this replica). */
  running: boolean;
  /** Next timer tick in this process; null before start() and after stop(). */
  nextRunAt: Date | null;
}

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
  /** Backend pid of the advisory-lock connection (ops, tests), null when none is open. */
  lockConnectionPid(): number | null;
}

export class UnknownJobError extends AppError {
  constructor(name: string) {
    super('JOB_NOT_FOUND', `no job named '${name}'`, 404);
    this.name = 'UnknownJobError';
  }
}

export class InvalidJobError extends Error {
  constructor(name: string, problems: string[]) {
    super(`job '${name}' is invalid: ${problems.join('; ')}`);
    this.name = 'InvalidJobError';
  }
}

interface Slot extends RunSlot {
  job: JobDefinition;
  /** Runs waiting for the next wake (ctx.waitForWake). */
  wakeListeners: Set<() => void>;
  current: Promise<RunResult> | null;
  stopCurrent: AbortController | null;
  timer?: NodeJS.Timeout;
  cron?: Cron;
  nextTickAt: Date | null;
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

  function launch(slot: Slot, trigger: Trigger): Promise<RunResult> {
    slot.running = true;
    slot.rerunRequested = false;
    const stop = new AbortController();
    slot.stopCurrent = stop;
    // A wake that arrives during the run is handed to the run when it asks (ctx.woken(),
    // ctx.waitForWake()), instead of a rerun after it: the run goes on without another lock,
    // job_state write and start.
    const wakes: RunWakes = {
      take() {
        if (!slot.rerunRequested || stopping) return false;
        slot.rerunRequested = false;
        return true;
      },
      listen(onWake) {
        slot.wakeListeners.add(onWake);
        return () => slot.wakeListeners.delete(onWake);
      },
    };
    const run = runJobOnce(deps, slot.job, stop.signal, trigger, wakes).finally(() => {
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
    const admission = admit(slot, trigger, stopping);
    if (admission === 'rerun-after') {
      slot.rerunRequested = true;
      for (const onWake of [...slot.wakeListeners]) onWake();
    }
    if (admission !== 'start') return;
    launch(slot, trigger).catch((err: unknown) => log.error({ err, job: slot.job.name }, 'job run crashed'));
  }

  function schedule(slot: Slot): void {
    const { job } = slot;
    if (job.every !== undefined) {
      // Our own interval rather than croner's: croner counts whole seconds, and jobs like the
      // realtime dispatcher tick faster than that.
      const every = job.every;
      slot.nextTickAt = new Date(Date.now() + every);
      slot.timer = setInterval(() => {
        slot.nextTickAt = new Date(Date.now() + every);
        fire(slot, 'tick');
      }, every);
      slot.timer.unref();
    } else {
      slot.cron = new Cron(job.cron!, { timezone: 'UTC', unref: true }, () => fire(slot, 'tick'));
    }
  }

  function wakeListener(): WakeListener {
    wake ??= createWakeListener({
      databaseUrl: opts.databaseUrl,
      log,
      onWake: (channel, payload) => {
        for (const slot of slots.values()) {
          if (slot.job.wakeChannel !== channel) continue;
          // Its owner woke a job with connectWake in this process already; other jobs on the channel wake.
          if (payload === ownWakePayload && slot.job.connectWake) continue;
          fire(slot, 'wake');
        }
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

  /** After a restart the gauge would read 0 until the next success; job_state knows better. */
  async function seedLastSuccess(): Promise<void> {
    try {
      const states = await readJobStates(opts.db, [...slots.keys()]);
      for (const s of states.values()) if (s.lastSuccessAt) metrics.recordSuccessAt(s.name, s.lastSuccessAt);
    } catch (err) {
      log.warn({ err }, 'job state could not be read at start');
    }
  }

  return {
    register(job) {
      const problems = jobDefinitionProblems(job);
      if (slots.has(job.name)) problems.push('a job with this name is already registered');
      if (problems.length > 0) throw new InvalidJobError(job.name, problems);
      const slot: Slot = { job, running: false, rerunRequested: false, wakeListeners: new Set(), current: null, stopCurrent: null, nextTickAt: null };
      slots.set(job.name, slot);
      job.connectWake?.(() => {
        if (started) fire(slot, 'wake');
      }, ownWakePayload);
      metrics.declare(job.name);
      if (started && !stopping) {
        schedule(slot);
        void listenAndCatchUp(slot);
      }
    },

    has: (name) => slots.has(name),

    async start() {
      if (started || stopping) return;
      started = true;
      for (const slot of slots.values()) schedule(slot);
      await seedLastSuccess();
      await Promise.all([...slots.values()].map(listenAndCatchUp));
      log.info({ jobs: [...slots.keys()] }, 'job runner started');
    },

    stop() {
      stopped ??= (async () => {
        stopping = true;
        for (const slot of slots.values()) {
          clearInterval(slot.timer);
          slot.cron?.stop();
          slot.nextTickAt = null;
        }
        const running = [...slots.values()].filter((s) => s.current);
        for (const slot of running) slot.stopCurrent?.abort(new Error('job runner stopping'));
        let timer: NodeJS.Timeout | undefined;
        const timedOut = await Promise.race([
          Promise.allSettled(running.map((s) => s.current)).then(() => false),
          new Promise<boolean>((resolve) => (timer = setTimeout(resolve, opts.stopTimeoutMs ?? 5000, true))),
        ]);
        clearTimeout(timer);
        if (timedOut) {
          const still = running.filter((s) => s.current).map((s) => s.job.name);
          log.warn({ jobs: still }, 'job runs ignored the stop signal; closing their connections anyway');
        }
        await Promise.all([wake?.close(), locks.close()]);
        log.info('job runner stopped');
      })();
      return stopped;
    },

    async runNow(name) {
      const slot = slots.get(name);
      if (!slot) throw new UnknownJobError(name);
      const admission = admit(slot, 'manual', stopping);
      if (admission !== 'start') return skippedRun(stopping ? 'runner_stopped' : 'already_running');
      return launch(slot, 'manual');
    },

    async list() {
      const states = await readJobStates(opts.db, [...slots.keys()]);
      return [...slots.values()].map(({ job, running, cron, nextTickAt }) => {
        const state = states.get(job.name);
        return {
          name: job.name,
          schedule: {
            ...(job.every === undefined ? {} : { every: job.every }),
            ...(job.cron === undefined ? {} : { cron: job.cron }),
            description: describeSchedule(job),
          },
          singleRunner: job.singleRunner === true,
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
        };
      });
    },

    lockConnectionPid: () => locks.backendPid(),
  };
}
