import { failSpan, inSpan, tracingOn, type Attributes } from '../observability/tracing.ts';
import type { BatchRun, RowTrace } from './batch-types.ts';
import type { Trigger } from './run-slot.ts';
import type { JobCounts } from './types.ts';

/**
 * The job kernel's spans: one per run (`<job> run`), a child per batch (`<job> batch`, attribute
 * `phase`) and, where the phase asks for it (`BatchPhase.traceRow`), a child per row. Counts go on
 * as attributes under the names the run reports them (claimed, failed, the job's own). With
 * tracing off each helper is a direct call.
 */

/**
 * A run started by a timer or a wake is a trace of its own (the wake may come from a request that
 * merely committed a row); a run started by hand (ops endpoint) continues the caller's trace.
 */
export function traceRun<R extends { outcome: string; counts: JobCounts; error?: string }>(
  job: string,
  jobRunId: string,
  trigger: Trigger,
  fn: () => Promise<R>,
): Promise<R> {
  if (!tracingOn()) return fn();
  return inSpan(
    `${job} run`,
    { job, jobRunId, trigger },
    async (span) => {
      const result = await fn();
      span.setAttributes({ outcome: result.outcome, ...result.counts });
      if (result.outcome === 'failure') failSpan(span, new Error(result.error ?? 'job run failed'));
      return result;
    },
    { root: trigger !== 'manual' },
  );
}

/** One batch of a phase: claim, process, record. `fn` returns the batch's count deltas. */
export function traceBatch(job: string, phase: string, batchSize: number, run: BatchRun, fn: () => Promise<void>): Promise<void> {
  if (!tracingOn()) return fn();
  return inSpan(`${job} batch`, { job, phase, batchSize, jobRunId: run.jobRunId }, async (span) => {
    const before = { ...run.counts };
    await fn();
    span.setAttributes(countDeltas(before, run.counts));
  });
}

/** What a batch added to each count (only the counts it moved, plus claimed). */
function countDeltas(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>): Attributes {
  const deltas: Attributes = { claimed: (after.claimed ?? 0) - (before.claimed ?? 0) };
  for (const [name, value] of Object.entries(after)) {
    const d = value - (before[name] ?? 0);
    if (d !== 0 && name !== 'batches') deltas[name] = d;
  }
  return deltas;
}

/** One row's step (process, or a one-at-a-time redo), in a span when the phase traces rows. */
export function traceRow<T>(phase: { name: string; traceRow?: RowTrace<unknown> }, row: unknown, fn: () => Promise<T>): Promise<T> {
  if (!tracingOn() || !phase.traceRow) return fn();
  const t = phase.traceRow;
  return inSpan(t.name ?? phase.name, t.attributes(row), () => fn());
}

/** One row of a failed batch redone in its own transaction (`oneByOne.claimOne`): always a span, it is its own unit of work. */
export function traceRedo<T>(phase: string, key: string, fn: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return fn();
  return inSpan(`${phase} row`, { phase, id: key }, () => fn());
}
