import type pg from 'pg';
import type { JobContext, JobDefinition } from '../../../platform/jobs/index.ts';
import type { ContactSearchIndex, MessengerContactSearchDocument } from './port.ts';
import type { ContactSearchMetrics } from './metrics.ts';
import { deleteIndexed, rescheduleFailed, selectDuePending } from './sql.ts';
import { CONTACT_SEARCH_WAKE_CHANNEL } from '../user-replica/replica-sql.ts';

/**
 * Writes the search documents of replica rows queued by the user replica consumer, after their
 * transaction committed (seed 002 step 6: Elasticsearch is never part of the PostgreSQL
 * transaction). Woken by the consumer's NOTIFY, with a timer as the safety net. A failed document
 * is counted (messenger_contact_search_index_failures_total) and retried with a backoff of
 * 1 s doubling to RetryMax; the replica and the consumer's offsets are never touched by it.
 */

export const CONTACT_SEARCH_INDEXER_JOB = 'messenger-contact-search-indexer';

export interface IndexerSettings {
  intervalMs: number;
  batchSize: number;
  retryMaxMs: number;
  /** A run stops starting batches after this long; the next tick (or wake) goes on. */
  maxRunMs?: number;
}

export interface IndexerDeps {
  pool: pg.Pool;
  index: ContactSearchIndex;
  metrics: ContactSearchMetrics;
  settings: IndexerSettings;
}

/** Delay before attempt `attempts + 1` of a document that failed `attempts + 1` times: 1 s, 2 s, … capped. */
export const indexRetryDelayMs = (attempts: number, maxMs: number): number => Math.min(maxMs, 1000 * 2 ** Math.min(attempts, 20));

export type IndexerCounts = { indexed: number; failed: number; batches: number };

export async function indexPendingDocuments(deps: IndexerDeps, ctx: Pick<JobContext, 'now' | 'signal' | 'log'>): Promise<IndexerCounts> {
  const { settings } = deps;
  const counts: IndexerCounts = { indexed: 0, failed: 0, batches: 0 };
  const started = performance.now();
  while (!ctx.signal.aborted && performance.now() - started < (settings.maxRunMs ?? 5000)) {
    const now = ctx.now();
    const due = await selectDuePending(deps.pool, now, settings.batchSize);
    if (due.length === 0) break;
    counts.batches += 1;
    const docs = due.map((d) => d.doc);
    let failed: { userId: string; reason: string }[];
    try {
      await deps.index.prepare();
      failed = (await deps.index.index(docs)).failed;
    } catch (err) {
      failed = docs.map((d) => ({ userId: d.userId, reason: err instanceof Error ? err.message : String(err) }));
    }
    const failedIds = new Set(failed.map((f) => f.userId));
    const stored: MessengerContactSearchDocument[] = docs.filter((d) => !failedIds.has(d.userId));
    await deleteIndexed(deps.pool, stored);
    counts.indexed += stored.length;
    if (failed.length > 0) {
      const attemptsOf = new Map(due.map((d) => [d.doc.userId, d.attempts]));
      await rescheduleFailed(
        deps.pool,
        failed.map((f) => ({
          userId: f.userId,
          nextAttemptAt: new Date(now.getTime() + indexRetryDelayMs(attemptsOf.get(f.userId) ?? 0, settings.retryMaxMs)),
        })),
      );
      counts.failed += failed.length;
      deps.metrics.indexFailures.inc({ stage: 'indexer' }, failed.length);
      ctx.log.warn(
        { adapter: deps.index.kind, failed: failed.length, of: docs.length, reason: failed[0]!.reason.slice(0, 200) },
        'contact search indexing failed; documents retried with backoff',
      );
      // The index is down or refusing: leave the rest for the next tick instead of hammering it.
      if (stored.length === 0) break;
    }
    if (due.length < settings.batchSize) break;
  }
  if (counts.indexed > 0) ctx.log.info(counts, 'contact search documents indexed');
  else ctx.log.debug(counts, 'contact search indexer found nothing to do');
  return counts;
}

export function contactSearchIndexerJob(deps: IndexerDeps): JobDefinition {
  return {
    name: CONTACT_SEARCH_INDEXER_JOB,
    every: deps.settings.intervalMs,
    singleRunner: true,
    wakeChannel: CONTACT_SEARCH_WAKE_CHANNEL,
    run: (ctx) => indexPendingDocuments(deps, ctx),
  };
}
