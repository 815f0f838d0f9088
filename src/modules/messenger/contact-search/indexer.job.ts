import { backoffDelayMs, type Backoff } from '../../../platform/backoff/index.ts';
import type { Db } from '../../../platform/db/index.ts';
import { errorText } from '../../../platform/errors/index.ts';
import { batchPhase, defineBatchWorker, type BatchRun, type BatchSettings, type BatchWorker, type Outcome } from '../../../platform/jobs/index.ts';
import { CONTACT_SEARCH_WAKE_CHANNEL } from '../user-replica/replica-sql.ts';
import type { ContactSearchMetrics } from './metrics.ts';
import type { ContactSearchIndex } from './port.ts';
import { deleteIndexed, rescheduleFailed, selectDuePending, type PendingDocument } from './sql.ts';

export const CONTACT_SEARCH_INDEXER_JOB = 'messenger-contact-search-indexer';

export interface IndexerSettings extends BatchSettings {
  intervalMs: number;
  retryMaxMs: number;
}

/** A document whose indexing failed waits 1 s, doubling up to RetryMax (no jitter: one indexer runs). */
export const indexRetryBackoff = (retryMaxMs: number): Backoff => ({ baseMs: 1000, factor: 2, capMs: retryMaxMs, jitter: 0 });

export interface IndexerDeps {
  db: Db;
  index: ContactSearchIndex;
  metrics: ContactSearchMetrics;
  settings: IndexerSettings;
}

/**
 * Writes the search documents of replica rows queued by the user replica consumer, after their
 * transaction committed (seed 002 step 6: the search index is never part of the PostgreSQL
 * transaction). Woken by the consumer's NOTIFY, with a timer as the safety net; single runner.
 * Each batch:
 *
 *   1. claim the queued documents that are due, read with their replica rows as they are now;
 *   2. send them in one bulk request; a document the index refuses fails alone
 *      (messenger_contact_search_index_failures_total), and when it refuses every one the run
 *      stops until the next tick instead of hammering it;
 *   3. indexed documents leave the queue, failed ones wait their backoff.
 *
 * The replica and the consumer's offsets are never touched by it.
 */
export function contactSearchIndexerJob(deps: IndexerDeps): BatchWorker {
  const { settings, index, metrics } = deps;
  const backoff = indexRetryBackoff(settings.retryMaxMs);

  /** Step 2: one bulk request; a refusal (or the index out of reach) fails that document alone. */
  async function indexBatch(due: readonly PendingDocument[], run: BatchRun): Promise<Outcome<PendingDocument, void>[]> {
    const docs = due.map((d) => d.doc);
    let failed: { userId: string; reason: string }[];
    try {
      await index.prepare();
      failed = (await index.index(docs)).failed;
    } catch (err) {
      failed = docs.map((d) => ({ userId: d.userId, reason: errorText(err, { root: false, name: false }) }));
    }
    if (failed.length > 0 && failed.length === docs.length) run.endPhase('the search index refused every document');
    const reasons = new Map(failed.map((f) => [f.userId, f.reason]));
    return due.map((row) => {
      const reason = reasons.get(row.doc.userId);
      return reason === undefined ? { row, status: 'done', result: undefined } : { row, status: 'failed', error: { message: reason.slice(0, 200) } };
    });
  }

  return defineBatchWorker({
    name: CONTACT_SEARCH_INDEXER_JOB,
    every: settings.intervalMs,
    singleRunner: true,
    wakeChannel: CONTACT_SEARCH_WAKE_CHANNEL,
    settings,
    phases(run) {
      run.count('indexed', 0);
      return [
        batchPhase<PendingDocument>({
          name: 'pending',
          keyOf: (p) => p.doc.userId,
          claim: (limit, run, exclude) => selectDuePending(deps.db, run.now(), limit, exclude),
          processBatch: indexBatch,
          async record(outcomes, run) {
            const now = run.now().getTime();
            const indexed = outcomes.filter((o) => o.status === 'done').map((o) => o.row.doc);
            await deleteIndexed(deps.db, indexed);
            run.count('indexed', indexed.length);
            const retries = outcomes
              .filter((o) => o.status === 'failed')
              .map((o) => ({ userId: o.row.doc.userId, nextAttemptAt: new Date(now + backoffDelayMs(backoff, o.row.attempts + 1)) }));
            await rescheduleFailed(deps.db, retries);
            // Counted once the retries are scheduled, so whoever sees the count sees them too.
            const failed = outcomes.filter((o) => o.status === 'failed');
            if (failed.length > 0) {
              metrics.indexFailures.inc({ stage: 'indexer' }, failed.length);
              run.log.warn(
                { adapter: index.kind, failed: failed.length, of: outcomes.length, reason: (failed[0] as { error: { message: string } }).error.message },
                'contact search indexing failed; documents retried with backoff',
              );
            }
          },
        }),
      ];
    },
    async finish(run) {
      const { indexed = 0, failed, batches } = run.counts;
      if (indexed > 0) run.log.info({ indexed, failed, batches }, 'contact search documents indexed');
      else run.log.debug({ indexed, failed, batches }, 'contact search indexer found nothing to do');
    },
  });
}
