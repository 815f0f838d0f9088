import type { Attributes } from '../observability/tracing.ts';
import type { BatchRows, JobContext, JobDefinition } from './types.ts';
import { JOBS_DEFAULTS } from './defaults.ts';

/** The batch worker's types: its settings, counts, outcomes, phases and the run its steps get (batch-worker.ts). */

/**
 * The settings every batch worker has; each job's TypeBox settings are their one source, validated
 * once by loadConfig (cross-field rules too), so the kernel takes them as they are.
 */
export interface BatchSettings {
  /** Rows claimed per batch. */
  batchSize: number;
  /** The seeds' MaxRunDuration: the run's signal aborts after this long, rows not started are released. */
  maxRunMs: number;
  /** Single-runner: the job's LockTtl (JobDefinition.lockTtlMs), at least maxRunMs + LOCK_TTL_MARGIN_MS. */
  lockTtlMs?: number;
  /** A drained phase waits this long for the next wake (NOTIFY at commit) before it ends; 0 = end at once. */
  idleWaitMs?: number;
  /** Rows processed at the same time within a batch (batchDefaults: one, in claim order). */
  concurrency?: number;
}

export const batchDefaults = {
  concurrency: JOBS_DEFAULTS.batchConcurrency,
} as const;

/** Counts every run reports: the kernel's four, plus the job's own (`run.count('dispatched')`). */
export interface BatchCounts {
  [name: string]: number;
  /** Batches claimed that held at least one row. */
  batches: number;
  /** Rows claimed. */
  claimed: number;
  /** Rows whose processing threw, or whose outcome could not be recorded even alone. */
  failed: number;
  /** Rows claimed but not processed because the run was stopped or passed maxRunMs; handed to `record` as `released`. */
  released: number;
}

/** What became of one claimed row. */
export type Outcome<Row, Result> =
  | { row: Row; status: 'done'; result: Result }
  | { row: Row; status: 'failed'; error: unknown }
  | { row: Row; status: 'released' };

/** What a phase's steps get: the job's context plus the run's counts and clock. */
export interface BatchRun extends Pick<JobContext, 'jobRunId' | 'signal' | 'log' | 'now' | 'fence'> {
  /** The runner's stop (or a lost lock) alone; `signal` also aborts when maxRunMs passes. */
  stop: AbortSignal;
  /** Adds `n` (default 1) to one of the run's counts. */
  count(name: string, n?: number): void;
  readonly counts: Readonly<BatchCounts>;
  /** Milliseconds left of the run's maxRunMs (negative once it has passed). */
  timeLeftMs(): number;
  /** Ends the current phase after this batch (e.g. the downstream refuses every row). */
  endPhase(reason: string): void;
  /**
   * For a phase with `ownBatches`: times `work` on the kernel's monotonic clock and records it as one
   * of the kernel's batches (job_batch_*) under `phase`, with the rows `rowsOf` reads from its result.
   * Like a kernel batch, one that found no rows is not recorded, nor one that threw (the job counts its failure).
   */
  batch<T>(phase: string, work: () => Promise<T>, rowsOf: (result: T) => BatchRows): Promise<T>;
}

/**
 * A job's own metrics, named as its seed spells them (alerts and dashboards read them), that the
 * kernel feeds, so no job measures its run or counts its failures itself.
 */
export interface RunMetrics {
  /** Observed with each run's duration in milliseconds (monotonic clock). */
  durationMs?: { observe(ms: number): void };
  /** One per row that failed (processing, the one-by-one redo, recording) and per redo that could not even read its rows. */
  errors?: { inc(labels: { phase: string }, n?: number): void };
  /** Set to what `backlog` returns after each run. */
  backlog?: { set(n: number): void };
}

/** What a phase names its row spans: `name` (default the phase's) and the row's attributes (seed 000: Kind, ChatId). */
export interface RowTrace<Row> {
  name?: string;
  attributes(row: Row): Attributes;
}

export interface BatchPhase<Row, Result = void> {
  /** Names the phase in logs and metric labels. */
  name: string;
  /** Rows per batch of this phase, when it differs from the worker's batchSize. */
  batchSize?: number;
  /** The row's identity for `exclude` and for the `id` field of its log lines. Default `row.id`. */
  keyOf?(row: Row): string;
  /**
   * A span per processed row, child of the batch's, named `name` (default the phase's) with the
   * row's attributes (seed 000: Kind, ChatId); inside, `spanAttributes` adds figures known later.
   */
  traceRow?: RowTrace<Row>;
  /** Fields added to the phase's per-row log lines (e.g. `{ type: 'Session' }`, as a seed names them). */
  logFields?: Record<string, unknown>;
  /**
   * Makes the kernel log each batch that claimed rows at info as `batch processed` (phase, rows,
   * failed, durationMs) with these fields, where a seed asks for that line; otherwise the batch's
   * line is `batch done` at debug.
   */
  batchLine?(outcomes: readonly Outcome<Row, Result>[]): Record<string, unknown>;
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
  /**
   * The phase's real batches are inside `process` (the fan-out's pages within one claimed task,
   * whose spans nest under the task's span): it reports each with `run.batch`, and the kernel
   * records none for the claim itself, so job_batch_* counts those batches.
   */
  ownBatches?: boolean;
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

/**
 * maxRunMs and lockTtlMs come from `settings`. `State` is what one run keeps beside the kernel's
 * counts (a cutoff, cursors): `start` makes it when the run starts, and `phases`, `backlog` and
 * `finish` get it.
 */
export interface BatchWorkerDefinition<State = undefined> extends Omit<JobDefinition, 'run' | 'maxRunMs' | 'lockTtlMs'> {
  settings: BatchSettings;
  /** The job's own counts, reported (at 0 when nothing happened) by every run. */
  counts?: readonly string[];
  /** Called when a run starts: the run's state. */
  start?(run: BatchRun): State;
  /** The run's phases, in order. */
  // Each phase declares its own row type; the kernel treats rows as opaque.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  phases(run: BatchRun, state: State): readonly BatchPhase<any, any>[];
  /** Fields on the run's `job started` and `job completed` lines (a seed's cutoff). */
  runFields?(state: State): Record<string, unknown>;
  /** Rows still waiting after the run, read after the phases: counted as `backlogRemaining` and set on metrics.backlog. */
  backlog?(run: BatchRun, state: State): Promise<number>;
  /** The job's seed-named metrics the kernel feeds. */
  metrics?: RunMetrics;
  /** After the phases, also after a stop. */
  finish?(run: BatchRun, state: State): Promise<void>;
}

export interface BatchWorker extends JobDefinition {
  /** One run outside the runner (tests, benchmarks): no lock, no wakes. */
  runOnce(ctx: BatchRunContext): Promise<BatchCounts>;
}

export type BatchRunContext = Pick<JobContext, 'jobRunId' | 'signal' | 'log' | 'now'> &
  Partial<Pick<JobContext, 'woken' | 'waitForWake' | 'observeBatch' | 'fence' | 'monotonicMs'>>;

/** Infers a phase's row and result types where it is written. */
export const batchPhase = <Row, Result = void>(phase: BatchPhase<Row, Result>): BatchPhase<Row, Result> => phase;

// Each phase declares its own row type; the kernel's loop treats rows as opaque.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyPhase = BatchPhase<any, any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyOutcome = Outcome<any, any>;
