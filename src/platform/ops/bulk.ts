import type { Db } from '../db/index.ts';
import { errorText } from '../errors/index.ts';
import type { Logger } from '../observability/index.ts';
import type { Clock } from '../time.ts';
import { beatAudit, updateAudit } from './audit-sql.ts';
import type { FailureAction, FailureFilter, FailureSource } from './types.ts';

export interface BulkDeps {
  db: Db;
  log: Logger;
  clock: Clock;
  /** Rows per statement and the pause between statements: the bounded rate. */
  chunk: number;
  pauseMs: number;
  /** The sign of life between statements (OPS_DEFAULTS.opsBulkBeatMs). */
  beatMs: number;
}

export interface BulkRun {
  auditId: string;
  source: FailureSource;
  action: FailureAction;
  filter: FailureFilter;
  max: number;
  actor: string;
}

/**
 * Runs a bulk action in the background at a bounded rate: `chunk` rows per statement, `pauseMs`
 * between statements, until `max` rows changed or no matching row is left. Its audit row is its
 * progress (`changed` after every statement) and its end (`done` or `failed` with the error).
 * Never rejects. `signal` (the app closing) stops it between statements, as `failed`. It beats
 * every `beatMs` while it runs, so a run whose process was killed is told from a slow one
 * (failStaleRuns).
 */
export async function runBulk(deps: BulkDeps, run: BulkRun, signal: AbortSignal): Promise<void> {
  const log = deps.log.child({ auditId: run.auditId, kind: run.source.kind, action: run.action });
  let changed = 0;
  const beat = setInterval(() => void beatAudit(deps.db, run.auditId).catch((err: unknown) => log.warn({ err }, 'ops bulk action could not write its sign of life')), deps.beatMs);
  beat.unref();
  try {
    while (changed < run.max) {
      if (signal.aborted) throw new Error('stopped: the service is shutting down');
      const want = Math.min(deps.chunk, run.max - changed);
      const n = await run.source.act(run.action, run.filter, want, run.actor);
      changed += n;
      if (!(await updateAudit(deps.db, run.auditId, { changed }))) {
        // Ended by another replica's sweep (this one gave no sign of life long enough): not ours to go on.
        log.warn({ changed }, 'ops bulk action was ended as failed meanwhile: stopped');
        return;
      }
      if (n < want) break;
      await new Promise((resolve) => setTimeout(resolve, deps.pauseMs));
    }
    await updateAudit(deps.db, run.auditId, { changed, status: 'done', finishedAt: deps.clock.now() });
    log.info({ changed }, 'ops bulk action done');
  } catch (err) {
    log.error({ err, changed }, 'ops bulk action failed');
    await updateAudit(deps.db, run.auditId, { changed, status: 'failed', finishedAt: deps.clock.now(), error: errorText(err, { max: 512 }) }).catch(() => undefined);
  } finally {
    clearInterval(beat);
  }
}
