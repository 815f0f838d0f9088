import { defineBatchWorker } from './batch-worker.ts';
import { batchPhase, type BatchRun, type BatchWorker } from './batch-types.ts';

/**
 * The job contract for the simple case: a sweep, whose claim is the work — a bounded DELETE …
 * RETURNING of rows past their retention, an UPDATE of due rows and the events it writes in one
 * transaction — repeated while it comes back full, until the run's deadline. Most of the batch
 * worker's vocabulary (process, record, overlap, own batches) is not needed for that; a sweep names
 * its schedule, batch size, run deadline and its steps, and the kernel does the rest (locks, run
 * logs and metrics, counts at zero, stopping between statements).
 */
export interface SweepStep<State, Row = { id: string }> {
  /** Names the step in logs and metric labels (the batch worker's phase). */
  name: string;
  /** The run count its rows add to (reported at 0 when it found none). */
  count: string;
  /** Claims and handles up to `limit` rows; what it handled. `exclude`: rows that failed earlier in this run. */
  sweep(limit: number, run: BatchRun, state: State, exclude: readonly string[]): Promise<readonly Row[]>;
  /** A row's identity for `exclude` and its log lines. Default `row.id`. */
  keyOf?(row: Row): string;
  /**
   * A step whose sweep is one transaction: when it fails, the rows it would have taken (read
   * without locks) are swept one at a time, so one bad row never holds the others back.
   */
  oneByOne?: {
    candidates(limit: number, run: BatchRun, state: State, exclude: readonly string[]): Promise<readonly string[]>;
    sweepOne(key: string, run: BatchRun, state: State): Promise<readonly Row[]>;
  };
}

export interface SweepDefinition<State = undefined> {
  /** The job's name (JobDefinition.name). */
  name: string;
  /** Interval in milliseconds, or a cron pattern in UTC. Exactly one. */
  every?: number;
  cron?: string;
  /** Rows per statement. */
  batchSize: number;
  /** The run starts no new statement after this long; the next run goes on. */
  maxRunMs: number;
  /** What one run keeps (a cutoff), made when it starts. */
  start?(run: BatchRun): State;
  /** Fields on the run's `job started` and `job completed` lines. */
  runFields?(state: State): Record<string, unknown>;
  /** In order; each runs until it comes back short. */
  // Each step declares its own row type; the sweep treats rows as opaque.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  steps: readonly SweepStep<State, any>[];
}

/** A sweep runs on one replica at a time: two replicas deleting the same rows only contend. */
export function defineSweep<State = undefined>(def: SweepDefinition<State>): BatchWorker {
  return defineBatchWorker<State>({
    name: def.name,
    ...(def.every === undefined ? { cron: def.cron! } : { every: def.every }),
    singleRunner: true,
    settings: { batchSize: def.batchSize, maxRunMs: def.maxRunMs },
    counts: def.steps.map((s) => s.count),
    ...(def.start ? { start: def.start } : {}),
    ...(def.runFields ? { runFields: def.runFields } : {}),
    phases: (_run, state) => def.steps.map((step) => sweepPhase(step, state)),
  });
}

function sweepPhase<State, Row>(step: SweepStep<State, Row>, state: State) {
  const counted = async (rows: Promise<readonly Row[]>, run: BatchRun) => {
    const handled = await rows;
    run.count(step.count, handled.length);
    return handled;
  };
  const { oneByOne } = step;
  return batchPhase<Row>({
    name: step.name,
    ...(step.keyOf ? { keyOf: step.keyOf } : {}),
    claim: (limit, run, exclude) => counted(step.sweep(limit, run, state, exclude), run),
    ...(oneByOne
      ? {
          oneByOne: {
            candidates: (limit, run, exclude) => oneByOne.candidates(limit, run, state, exclude),
            claimOne: (key, run) => counted(oneByOne.sweepOne(key, run, state), run),
          },
        }
      : {}),
  });
}
