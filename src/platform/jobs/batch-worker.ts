import { messageOf } from '../errors/index.ts';
import type { JobContext, JobDefinition } from './types.ts';

/**
 * The one shape of every background job (DESIGN "One worker shape", after River's maintenance
 * services): a run goes through its phases in order; each phase repeats bounded batches of
 *
 *   1. claim   — up to `batchSize` rows in one statement (row locks, leases or SKIP LOCKED keep
 *                replicas apart); a claim may also do the whole work (a bounded DELETE … RETURNING,
 *                or a claim and its change in one transaction);
 *   2. process — each row outside any transaction (a push, a send), `concurrency` at a time, the
 *                stop signal checked between rows: rows not started are handed back as `released`;
 *   3. record  — the batch's outcomes in one statement; if that fails, row by row (`recordOne`),
 *                so one bad row never undoes the others;
 *
 * while the batch came back full and the run is within `maxRunMs`; a phase that drained takes a
 * wake that arrived meanwhile, or waits up to `idleWaitMs` for the next one, before it ends. A claim
 * that does the work and fails is redone one row at a time (`candidates` + `claimOne`). Counts,
 * per-batch metrics and the run's log lines are the kernel's; the job keeps only its domain steps.
 */

/** The settings every batch worker has; each job's TypeBox settings are their one source. */
export interface BatchSettings {
  /** Rows claimed per batch. */
  batchSize: number;
  /** A run starts no new batch after this long (the seeds' MaxRunDuration). */
  maxRunMs: number;
  /** A drained phase waits this long for the next wake (NOTIFY at commit) before it ends; 0 = end at once. */
  idleWaitMs?: number;
  /** Rows processed at the same time within a batch. Default 1 (in claim order). */
  concurrency?: number;
}

/** Counts every run reports: the kernel's four, plus the job's own (`run.count('dispatched')`). */
export interface BatchCounts {
  [name: string]: number;
  /** Batches claimed that held at least one row. */
  batches: number;
  /** Rows claimed. */
  claimed: number;
  /** Rows whose processing threw, or whose outcome could not be recorded even alone. */
  failed: number;
  /** Rows claimed but not processed because the run was stopped; handed to `record` as `released`. */
  released: number;
}

/** What became of one claimed row. */
export type Outcome<Row, Result> =
  | { row: Row; status: 'done'; result: Result }
  | { row: Row; status: 'failed'; error: unknown }
  | { row: Row; status: 'released' };

/** What a phase's steps get: the job's context plus the run's counts and clock. */
export interface BatchRun extends Pick<JobContext, 'jobRunId' | 'signal' | 'log' | 'now'> {
  /** Adds `n` (default 1) to one of the run's counts. */
  count(name: string, n?: number): void;
  readonly counts: Readonly<BatchCounts>;
  /** Milliseconds left of the run's maxRunMs (negative once it has passed). */
  timeLeftMs(): number;
  /** Ends the current phase after this batch (e.g. the downstream refuses every row). */
  endPhase(reason: string): void;
}

export interface BatchPhase<Row, Result = void> {
  /** Names the phase in logs and metric labels. */
  name: string;
  /** Rows per batch of this phase, when it differs from the worker's batchSize. */
  batchSize?: number;
  /** The row's identity for `exclude` and for the `id` field of its log lines. Default `row.id`. */
  keyOf?(row: Row): string;
  /** Fields added to the phase's per-row log lines (e.g. `{ type: 'Session' }`, as a seed names them). */
  logFields?: Record<string, unknown>;
  /**
   * Step 1. `exclude`: keys of rows whose outcome is still being recorded (overlapRecord) or that
   * failed earlier in this run; a claim leaves them alone.
   */
  claim(limit: number, run: BatchRun, exclude: readonly string[]): Promise<readonly Row[]>;
  /** Step 2, one row outside any transaction; a throw is that row's `failed` outcome. */
  process?(row: Row, run: BatchRun): Promise<Result>;
  /** Step 2 for work done per batch (one bulk request); returns an outcome per row. */
  processBatch?(rows: readonly Row[], run: BatchRun): Promise<Outcome<Row, Result>[]>;
  /** Step 3, set-based. */
  record?(outcomes: readonly Outcome<Row, Result>[], run: BatchRun): Promise<void>;
  /** Step 3 for one row, when `record` failed. Default: `record([outcome])`. */
  recordOne?(outcome: Outcome<Row, Result>, run: BatchRun): Promise<void>;
  /** The record of a batch overlaps the claim and processing of the next (its rows are excluded). */
  overlapRecord?: boolean;
  /**
   * For a claim that does the work in one transaction: when it fails, the rows it would have taken
   * (read without locks) are redone one at a time with `claimOne`, each alone.
   */
  oneByOne?: {
    candidates(limit: number, run: BatchRun, exclude: readonly string[]): Promise<readonly string[]>;
    /** Claims and does one row; returns what it handled (empty: the row was gone or taken). */
    claimOne(key: string, run: BatchRun): Promise<readonly Row[]>;
  };
}

export interface BatchWorkerDefinition extends Omit<JobDefinition, 'run'> {
  settings: BatchSettings;
  /** The job's own counts, reported (at 0 when nothing happened) by every run. */
  counts?: readonly string[];
  /** Called at the start of each run, so phases can keep per-run state (a cursor, blocked keys). */
  // Each phase declares its own row type; the kernel treats rows as opaque.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  phases(run: BatchRun): readonly BatchPhase<any, any>[];
  /** After the phases, also after a stop (e.g. the backlog gauge). */
  finish?(run: BatchRun): Promise<void>;
}

export interface BatchWorker extends JobDefinition {
  /** One run outside the runner (tests, benchmarks): no lock, no wakes. */
  runOnce(ctx: BatchRunContext): Promise<BatchCounts>;
}

export type BatchRunContext = Pick<JobContext, 'jobRunId' | 'signal' | 'log' | 'now'> & Partial<Pick<JobContext, 'woken' | 'waitForWake' | 'observeBatch'>>;

/** Infers a phase's row and result types where it is written. */
export const batchPhase = <Row, Result = void>(phase: BatchPhase<Row, Result>): BatchPhase<Row, Result> => phase;

export function batchSettingsProblems(s: BatchSettings): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(s.batchSize) || s.batchSize < 1) problems.push('batchSize must be a positive integer');
  if (!(s.maxRunMs > 0)) problems.push('maxRunMs must be positive');
  if (s.idleWaitMs !== undefined && !(s.idleWaitMs >= 0)) problems.push('idleWaitMs must not be negative');
  if (s.concurrency !== undefined && (!Number.isInteger(s.concurrency) || s.concurrency < 1)) problems.push('concurrency must be a positive integer');
  return problems;
}

const defaultKey = (row: unknown): string => String((row as { id?: unknown }).id);

export function defineBatchWorker(def: BatchWorkerDefinition): BatchWorker {
  const problems = batchSettingsProblems(def.settings);
  if (problems.length > 0) throw new Error(`job '${def.name}': ${problems.join('; ')}`);
  const { phases, finish, settings, counts: ownCounts = [], ...job } = def;

  async function runOnce(ctx: BatchRunContext): Promise<BatchCounts> {
    const counts: BatchCounts = { batches: 0, claimed: 0, failed: 0, released: 0 };
    for (const name of ownCounts) counts[name] = 0;
    // The run's deadline holds on the monotonic clock and on the injected one, so tests can move
    // time past MaxRunDuration instead of waiting for it.
    const deadline = performance.now() + settings.maxRunMs;
    const clockDeadline = ctx.now().getTime() + settings.maxRunMs;
    let phaseEnd: string | null = null;
    const run: BatchRun = {
      jobRunId: ctx.jobRunId,
      signal: ctx.signal,
      log: ctx.log,
      now: () => ctx.now(),
      counts,
      count(name, n = 1) {
        counts[name] = (counts[name] ?? 0) + n;
      },
      timeLeftMs: () => Math.min(deadline - performance.now(), clockDeadline - ctx.now().getTime()),
      endPhase(reason) {
        phaseEnd = reason;
      },
    };
    try {
      for (const phase of phases(run)) {
        if (ctx.signal.aborted || run.timeLeftMs() <= 0) break;
        phaseEnd = null;
        await runPhase(phase, run, ctx, settings, () => phaseEnd);
      }
    } finally {
      await finish?.(run);
    }
    return counts;
  }

  return { ...job, run: (ctx) => runOnce(ctx), runOnce };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyPhase = BatchPhase<any, any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyOutcome = Outcome<any, any>;

async function runPhase(phase: AnyPhase, run: BatchRun, ctx: BatchRunContext, settings: BatchSettings, ended: () => string | null): Promise<void> {
  const limit = phase.batchSize ?? settings.batchSize;
  const keyOf = phase.keyOf ?? defaultKey;
  const failedKeys = new Set<string>();
  let recording: Promise<void> | undefined;
  let inFlight: string[] = [];
  try {
    while (!run.signal.aborted) {
      const t0 = performance.now();
      const before = { claimed: run.counts.claimed, failed: run.counts.failed, released: run.counts.released };
      const exclude = inFlight.length > 0 || failedKeys.size > 0 ? [...inFlight, ...failedKeys] : [];
      const { rows, claimed } = await claimBatch(phase, limit, run, exclude, failedKeys);
      if (claimed > 0) {
        run.count('batches');
        run.count('claimed', claimed);
        const outcomes = await processRows(phase, rows, run, settings.concurrency ?? 1);
        for (const o of outcomes) {
          if (o.status === 'failed') {
            failedKeys.add(keyOf(o.row));
            run.count('failed');
            run.log.error({ phase: phase.name, id: keyOf(o.row), ...phase.logFields, err: o.error }, 'item failed');
          } else if (o.status === 'released') run.count('released');
        }
        if (phase.record) {
          await recording;
          inFlight = phase.overlapRecord ? rows.map(keyOf) : [];
          recording = recordBatch(phase, outcomes, run, failedKeys, keyOf);
          if (!phase.overlapRecord) await recording;
        }
        observe(ctx, phase.name, run, before, performance.now() - t0);
      }
      if (ended() !== null) {
        if (ended() === ALL_FAILED) run.log.warn({ phase: phase.name, failed: claimed }, 'every row of the batch failed; phase stopped until the next tick');
        else run.log.warn({ phase: phase.name, reason: ended() }, 'phase ended early; the next run goes on');
        break;
      }
      const left = run.timeLeftMs();
      if (left <= 0) break;
      if (claimed >= limit || ctx.woken?.()) continue;
      if (settings.idleWaitMs && ctx.waitForWake && (await ctx.waitForWake(Math.min(settings.idleWaitMs, left)))) continue;
      break;
    }
  } finally {
    await recording;
  }
}

/**
 * Step 1, and the one-at-a-time redo of a claim that does the work and failed. `claimed` is what
 * the batch took, failed rows included, so a batch of failures still counts as full and the phase
 * goes on past them (they are excluded from later claims of the run).
 */
/** The reason a phase ends when every row of a redone batch failed on its own. */
const ALL_FAILED = 'every row of the batch failed on its own';

async function claimBatch(
  phase: AnyPhase,
  limit: number,
  run: BatchRun,
  exclude: readonly string[],
  failedKeys: Set<string>,
): Promise<{ rows: readonly unknown[]; claimed: number }> {
  if (!phase.oneByOne) {
    const rows = await phase.claim(limit, run, exclude);
    return { rows, claimed: rows.length };
  }
  try {
    const rows = await phase.claim(limit, run, exclude);
    return { rows, claimed: rows.length };
  } catch (err) {
    const keys = await phase.oneByOne.candidates(limit, run, exclude);
    run.log.warn({ phase: phase.name, rows: keys.length, err: { message: messageOf(err) } }, 'batch failed, redoing its rows one by one');
    const rows: unknown[] = [];
    let failed = 0;
    for (const key of keys) {
      if (run.signal.aborted) break;
      try {
        rows.push(...(await phase.oneByOne.claimOne(key, run)));
      } catch (rowErr) {
        failed++;
        failedKeys.add(key);
        run.count('failed');
        run.log.error({ phase: phase.name, id: key, ...phase.logFields, err: rowErr }, 'item failed');
      }
    }
    // Every row failed on its own: the cause is not one row (database, schema). Stop instead of
    // logging one failure per row; the next run retries.
    if (failed > 1 && failed === keys.length) run.endPhase(ALL_FAILED);
    return { rows, claimed: keys.length };
  }
}

async function processRows(phase: AnyPhase, real: readonly unknown[], run: BatchRun, concurrency: number): Promise<AnyOutcome[]> {
  if (phase.processBatch) {
    if (run.signal.aborted) return real.map((row) => ({ row, status: 'released' }));
    return phase.processBatch(real, run);
  }
  if (!phase.process) return real.map((row) => ({ row, status: 'done', result: undefined }));
  const outcomes: AnyOutcome[] = new Array(real.length);
  let next = 0;
  const lane = async () => {
    while (next < real.length) {
      const i = next++;
      const row = real[i];
      if (run.signal.aborted) {
        outcomes[i] = { row, status: 'released' };
        continue;
      }
      try {
        outcomes[i] = { row, status: 'done', result: await phase.process!(row, run) };
      } catch (error) {
        outcomes[i] = { row, status: 'failed', error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, real.length) }, lane));
  return outcomes;
}

/** Step 3: set-based; if that statement fails, row by row, so one bad row never undoes the others. */
async function recordBatch(phase: AnyPhase, outcomes: AnyOutcome[], run: BatchRun, failedKeys: Set<string>, keyOf: (row: unknown) => string): Promise<void> {
  if (outcomes.length === 0) return;
  try {
    await phase.record!(outcomes, run);
    return;
  } catch (err) {
    run.log.warn({ phase: phase.name, rows: outcomes.length, err: { message: messageOf(err) } }, 'batch record failed; recording row by row');
  }
  const recordOne = phase.recordOne ?? ((o: AnyOutcome, r: BatchRun) => phase.record!([o], r));
  for (const o of outcomes) {
    try {
      await recordOne(o, run);
    } catch (err) {
      failedKeys.add(keyOf(o.row));
      run.count('failed');
      run.log.error({ phase: phase.name, id: keyOf(o.row), ...phase.logFields, err: { message: messageOf(err) } }, 'outcome could not be recorded; the row is retried later');
    }
  }
}

function observe(ctx: BatchRunContext, phase: string, run: BatchRun, before: { claimed: number; failed: number; released: number }, durationMs: number): void {
  const rows = {
    claimed: run.counts.claimed - before.claimed,
    failed: run.counts.failed - before.failed,
    released: run.counts.released - before.released,
  };
  ctx.observeBatch?.(phase, rows, durationMs);
  run.log.debug({ phase, ...rows, durationMs: Math.round(durationMs) }, 'batch done');
}

