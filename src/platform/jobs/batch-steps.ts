import { errorText } from '../errors/index.ts';
import { LeaseLostError } from './lease-sql.ts';
import type { AnyOutcome, AnyPhase, BatchRun } from './batch-types.ts';
import { traceRedo, traceRow } from './job-tracing.ts';

/** The three steps of one batch — claim (with the one-at-a-time redo), process, record (with the row-by-row fallback) — that batch-worker.ts repeats. */

/** What the steps tell the run about failures: its start line at info, the job's error counter. */
export interface FailureHooks {
  announce(): void;
  onError(phase: string, n?: number): void;
}

/** The reason a phase ends when every row of a redone batch failed on its own. */
export const ALL_FAILED = 'every row of the batch failed on its own';

/**
 * Step 1, and the one-at-a-time redo of a claim that does the work and failed. `claimed` is what
 * the batch took, failed rows included, so a batch of failures still counts as full and the phase
 * goes on past them (they are excluded from later claims of the run).
 */
export async function claimBatch(
  phase: AnyPhase,
  limit: number,
  run: BatchRun,
  exclude: readonly string[],
  failedKeys: Set<string>,
  hooks: FailureHooks,
): Promise<{ rows: readonly unknown[]; claimed: number }> {
  try {
    const rows = await phase.claim(limit, run, exclude);
    return { rows, claimed: rows.length };
  } catch (err) {
    if (!phase.oneByOne) throw err;
    // The run found work (the batch failed at it): its start line goes out at info before the failures'.
    hooks.announce();
    let keys: readonly string[];
    try {
      keys = await phase.oneByOne.candidates(limit, run, exclude);
    } catch (readErr) {
      // The batch failed and its rows cannot even be read: the database is down or the schema
      // broke, and the run fails. Counted, or the job's error counter would stay flat through the
      // outage its alert is for.
      hooks.onError(phase.name);
      throw readErr;
    }
    run.log.warn({ phase: phase.name, rows: keys.length, err: { message: errorText(err, { root: false, name: false }) } }, 'batch failed, redoing its rows one by one');
    const rows: unknown[] = [];
    let failed = 0;
    for (const key of keys) {
      if (run.signal.aborted) break;
      try {
        rows.push(...(await traceRedo(phase.name, key, () => phase.oneByOne!.claimOne(key, run))));
      } catch (rowErr) {
        failed++;
        failedKeys.add(key);
        run.count('failed');
        hooks.onError(phase.name);
        run.log.error({ phase: phase.name, id: key, ...phase.logFields, err: rowErr }, 'item failed');
      }
    }
    // Every row failed on its own: the cause is not one row (database, schema). Stop instead of
    // logging one failure per row; the next run retries.
    if (failed > 1 && failed === keys.length) run.endPhase(ALL_FAILED);
    return { rows, claimed: keys.length };
  }
}

export async function processRows(phase: AnyPhase, rows: readonly unknown[], run: BatchRun, concurrency: number): Promise<AnyOutcome[]> {
  if (phase.processBatch) {
    // A claimed batch goes to its bulk step unless the run was stopped: maxRunMs passing during the
    // claim does not hand it back unsent (the step sees run.signal and decides per row itself).
    if (run.stop.aborted) return rows.map((row) => ({ row, status: 'released' }));
    return phase.processBatch(rows, run);
  }
  if (!phase.process) return rows.map((row) => ({ row, status: 'done', result: undefined }));
  const outcomes: AnyOutcome[] = new Array(rows.length);
  let next = 0;
  const lane = async () => {
    while (next < rows.length) {
      const i = next++;
      const row = rows[i];
      if (run.signal.aborted) {
        outcomes[i] = { row, status: 'released' };
        continue;
      }
      try {
        outcomes[i] = { row, status: 'done', result: await traceRow(phase, row, () => phase.process!(row, run)) };
      } catch (error) {
        outcomes[i] = { row, status: 'failed', error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, rows.length) }, lane));
  return outcomes;
}

/** Step 3: set-based; if that statement fails, row by row, so one bad row never undoes the others. */
export async function recordBatch(
  phase: AnyPhase,
  outcomes: AnyOutcome[],
  run: BatchRun,
  failedKeys: Set<string>,
  keyOf: (row: unknown) => string,
  onError: FailureHooks['onError'],
): Promise<void> {
  if (outcomes.length === 0) return;
  try {
    await phase.record!(outcomes, run);
    return;
  } catch (err) {
    // A fenced write refused: another replica holds the lock now, so this run records nothing more.
    if (err instanceof LeaseLostError) throw err;
    run.log.warn({ phase: phase.name, rows: outcomes.length, err: { message: errorText(err, { root: false, name: false }) } }, 'batch record failed; recording row by row');
  }
  const recordOne = phase.recordOne ?? ((o: AnyOutcome, r: BatchRun) => phase.record!([o], r));
  for (const o of outcomes) {
    try {
      await recordOne(o, run);
    } catch (err) {
      if (err instanceof LeaseLostError) throw err;
      failedKeys.add(keyOf(o.row));
      run.count('failed');
      onError(phase.name);
      run.log.error({ phase: phase.name, id: keyOf(o.row), ...phase.logFields, err: { message: errorText(err, { root: false, name: false }) } }, 'outcome could not be recorded; the row is retried later');
    }
  }
}
