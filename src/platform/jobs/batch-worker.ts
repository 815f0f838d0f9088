import diagnostics_channel from 'node:diagnostics_channel';
import { ReportedError } from '../errors/index.ts';
import { ALL_FAILED, claimBatch, processRows, recordBatch } from './batch-steps.ts';
import { traceBatch } from './job-tracing.ts';
import { batchDefaults, type AnyOutcome, type AnyPhase, type BatchCounts, type BatchRun, type BatchRunContext, type BatchSettings, type BatchWorker, type BatchWorkerDefinition } from './batch-types.ts';
import { JOBS_DEFAULTS } from './defaults.ts';

/**
 * The one shape of every background job (docs/architecture.md, "One worker shape", after River's maintenance
 * services): a run goes through its phases in order; each phase repeats bounded batches of
 *
 *   1. claim   — up to `batchSize` rows in one statement (row locks, leases or SKIP LOCKED keep
 *                replicas apart); a claim may also do the whole work (a bounded DELETE … RETURNING,
 *                or a claim and its change in one transaction);
 *   2. process — each row outside any transaction (a push, a send), `concurrency` at a time, the
 *                stop signal checked between rows: rows not started are handed back as `released`
 *                (the signal also aborts when maxRunMs passes, mid-batch);
 *   3. record  — the batch's outcomes in one statement; if that fails, row by row (`recordOne`),
 *                so one bad row never undoes the others;
 *
 * while the batch came back full and the run is within `maxRunMs`; a phase that drained takes a
 * wake that arrived meanwhile, or waits up to `idleWaitMs` for the next one, before it ends. A claim
 * that does the work and fails is redone one row at a time (`candidates` + `claimOne`). Counts,
 * per-batch metrics, the run's `job started` / `job completed` lines, its duration, error counter
 * and backlog gauge are the kernel's; the job keeps only its domain steps (docs/writing-a-job.md).
 */

const defaultKey = (row: unknown): string => String((row as { id?: unknown }).id);

/**
 * Each batch's timing, for a profiler or a benchmark that subscribes (nothing is built while none
 * does): `BatchTiming`, times from `performance.now()`.
 */
export const BATCH_TIMING_CHANNEL = 'pin:jobs:batch';
const batchTimings = diagnostics_channel.channel(BATCH_TIMING_CHANNEL);

export interface BatchTiming {
  job: string;
  phase: string;
  rows: number;
  claimStartedAt: number;
  claimEndedAt: number;
  /** Every row processed (pushed, sent); the record may still be under way (overlapRecord). */
  processEndedAt: number;
}

/** What one run's loop keeps beside the job's state: the run, its clock, its lines and metrics. */
interface RunLoop {
  job: string;
  run: BatchRun;
  ctx: BatchRunContext;
  settings: BatchSettings;
  monotonicMs: () => number;
  /** Logs `job started` at info once, when the run first finds work (an idle run stays at debug). */
  announce(): void;
  onError(phase: string, n?: number): void;
  ended(): string | null;
}

export function defineBatchWorker<State = undefined>(def: BatchWorkerDefinition<State>): BatchWorker {
  const { phases, finish, start, runFields, backlog, metrics, settings, counts: ownCounts = [], ...job } = def;

  async function runOnce(ctx: BatchRunContext): Promise<BatchCounts> {
    const counts: BatchCounts = { batches: 0, claimed: 0, failed: 0, released: 0 };
    for (const name of ownCounts) counts[name] = 0;
    const monotonicMs = ctx.monotonicMs ?? (() => performance.now());
    // On the monotonic clock: a run's length is real time, whatever the injected wall clock says.
    const t0 = monotonicMs();
    const deadline = t0 + settings.maxRunMs;
    // MaxRunDuration holds mid-batch too: the run's signal aborts when it passes, so the rows not
    // started yet are released (the next run takes them at once) and a phase's own waits end.
    const overtime = new AbortController();
    const overtimeTimer = setTimeout(() => overtime.abort(new Error(`maxRunMs (${settings.maxRunMs} ms) passed`)), settings.maxRunMs);
    let phaseEnd: string | null = null;
    const run: BatchRun = {
      jobRunId: ctx.jobRunId,
      signal: AbortSignal.any([ctx.signal, overtime.signal]),
      stop: ctx.signal,
      log: ctx.log,
      now: () => ctx.now(),
      ...(ctx.fence ? { fence: ctx.fence } : {}),
      counts,
      count(name, n = 1) {
        counts[name] = (counts[name] ?? 0) + n;
      },
      timeLeftMs: () => deadline - monotonicMs(),
      endPhase(reason) {
        phaseEnd = reason;
      },
      async batch(phase, work, rowsOf) {
        const started = monotonicMs();
        const result = await work();
        const rows = rowsOf(result);
        if (rows.claimed + rows.failed + rows.released > 0) ctx.observeBatch?.(phase, rows, monotonicMs() - started);
        return result;
      },
    };
    const state = start ? start(run) : (undefined as State);
    const fields = () => runFields?.(state) ?? {};
    let announced = false;
    const loop: RunLoop = {
      job: job.name,
      run,
      ctx,
      settings,
      monotonicMs,
      announce() {
        if (announced) return;
        announced = true;
        run.log.info(fields(), 'job started');
      },
      onError: (phase, n = 1) => metrics?.errors?.inc({ phase }, n),
      ended: () => phaseEnd,
    };
    run.log.debug(fields(), 'job started');
    try {
      for (const phase of phases(run, state)) {
        if (ctx.signal.aborted || run.timeLeftMs() <= 0) break;
        phaseEnd = null;
        await runPhase(loop, phase);
      }
    } finally {
      clearTimeout(overtimeTimer);
      try {
        // Also after a stop or a failed phase: what is left is what the gauge is for.
        if (backlog) {
          const left = await backlog(run, state);
          run.count('backlogRemaining', left);
          metrics?.backlog?.set(left);
        }
        await finish?.(run, state);
      } finally {
        const durationMs = monotonicMs() - t0;
        metrics?.durationMs?.observe(durationMs);
        const line = { ...counts, ...fields(), durationMs: Math.round(durationMs), aborted: run.signal.aborted };
        if (counts.claimed + counts.failed === 0) run.log.debug(line, 'job completed');
        else run.log.info(line, 'job completed');
      }
    }
    return counts;
  }

  const limits = { maxRunMs: settings.maxRunMs, ...(settings.lockTtlMs === undefined ? {} : { lockTtlMs: settings.lockTtlMs }) };
  return { ...job, ...limits, logsCompletion: true, run: (ctx) => runOnce(ctx), runOnce };
}

async function runPhase(loop: RunLoop, phase: AnyPhase): Promise<void> {
  const { run, ctx, settings } = loop;
  const limit = phase.batchSize ?? settings.batchSize;
  const keyOf = phase.keyOf ?? defaultKey;
  const failedKeys = new Set<string>();
  let recording: Promise<void> | undefined;
  let inFlight: string[] = [];
  try {
    while (!run.signal.aborted) {
      let claimed = 0;
      await traceBatch(loop.job, phase.name, limit, run, async () => {
        const t0 = loop.monotonicMs();
        const claimStartedAt = performance.now();
        const before = { claimed: run.counts.claimed, failed: run.counts.failed, released: run.counts.released };
        const exclude = inFlight.length > 0 || failedKeys.size > 0 ? [...inFlight, ...failedKeys] : [];
        const batch = await claimBatch(phase, limit, run, exclude, failedKeys, loop);
        claimed = batch.claimed;
        if (claimed === 0) return;
        const claimEndedAt = performance.now();
        loop.announce();
        const { rows } = batch;
        run.count('batches');
        run.count('claimed', claimed);
        const outcomes = await processRows(phase, rows, run, settings.concurrency ?? batchDefaults.concurrency);
        if (batchTimings.hasSubscribers) {
          const timing: BatchTiming = { job: loop.job, phase: phase.name, rows: claimed, claimStartedAt, claimEndedAt, processEndedAt: performance.now() };
          batchTimings.publish(timing);
        }
        const failed = outcomes.filter((o) => o.status === 'failed');
        for (const o of outcomes) if (o.status === 'released') run.count('released');
        for (const o of failed) failedKeys.add(keyOf(o.row));
        run.count('failed', failed.length);
        if (failed.length > 0) loop.onError(phase.name, failed.length);
        logFailures(run, phase, failed, keyOf);
        if (phase.record) {
          await recording;
          inFlight = phase.overlapRecord ? rows.map(keyOf) : [];
          recording = recordBatch(phase, outcomes, run, failedKeys, keyOf, loop.onError);
          // Awaited before the next record or at the phase's end; a rejection is not unhandled meanwhile.
          recording.catch(() => undefined);
          if (!phase.overlapRecord) await recording;
        }
        observe(ctx, phase, outcomes, run, before, loop.monotonicMs() - t0);
      });
      const ended = loop.ended();
      if (ended !== null) {
        if (ended === ALL_FAILED) run.log.warn({ phase: phase.name, failed: claimed }, 'every row of the batch failed; phase stopped until the next tick');
        else run.log.warn({ phase: phase.name, reason: ended }, 'phase ended early; the next run goes on');
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


function logFailures(run: BatchRun, phase: AnyPhase, all: readonly AnyOutcome[], keyOf: (row: unknown) => string): void {
  const failed = all.filter((o) => !((o as { error: unknown }).error instanceof ReportedError));
  if (failed.length <= JOBS_DEFAULTS.failureLinesPerBatch) {
    for (const o of failed) run.log.error({ phase: phase.name, id: keyOf(o.row), ...phase.logFields, err: (o as { error: unknown }).error }, 'item failed');
    return;
  }
  const first = failed[0] as { error: unknown };
  run.log.error(
    { phase: phase.name, failed: failed.length, ids: failed.slice(0, 10).map((o) => keyOf(o.row)), ...phase.logFields, err: first.error },
    'items failed',
  );
}

/** The batch's metrics and its line: `batch processed` at info where the phase asks for it (a seed's line), else `batch done` at debug. */
function observe(
  ctx: BatchRunContext,
  phase: AnyPhase,
  outcomes: readonly AnyOutcome[],
  run: BatchRun,
  before: { claimed: number; failed: number; released: number },
  durationMs: number,
): void {
  const rows = {
    claimed: run.counts.claimed - before.claimed,
    failed: run.counts.failed - before.failed,
    released: run.counts.released - before.released,
  };
  if (!phase.ownBatches) ctx.observeBatch?.(phase.name, rows, durationMs);
  if (phase.batchLine) {
    run.log.info({ phase: phase.name, rows: rows.claimed, failed: rows.failed, ...phase.batchLine(outcomes), durationMs: Math.round(durationMs) }, 'batch processed');
  } else {
    run.log.debug({ phase: phase.name, ...rows, durationMs: Math.round(durationMs) }, 'batch done');
  }
}

