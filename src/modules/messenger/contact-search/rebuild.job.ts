import type pg from 'pg';
import type { JobContext, JobDefinition } from '../../../platform/jobs/index.ts';
import type { ContactSearchIndex } from './port.ts';
import type { ContactSearchMetrics } from './metrics.ts';
import { countReplica, enqueuePending, existingReplicaIds, selectReplicaPage } from './sql.ts';

/**
 * MessengerContactSearchRebuildJob (seed 002 step 6): reconciles the whole contact search index
 * with the replica — every replica row is written in bulk batches (external versioning keeps a
 * newer document the indexer wrote meanwhile), then documents whose user is not in the replica
 * are deleted. Logs its progress per batch. Run on its cron, or now through
 * POST /api/ops/jobs/messenger-contact-search-rebuild/run (after an index was lost or recreated).
 */

export const CONTACT_SEARCH_REBUILD_JOB = 'messenger-contact-search-rebuild';

export interface RebuildDeps {
  pool: pg.Pool;
  index: ContactSearchIndex;
  metrics: ContactSearchMetrics;
  batchSize: number;
}

export type RebuildCounts = { indexed: number; failed: number; removed: number; batches: number };

export async function rebuildContactSearch(deps: RebuildDeps, ctx: Pick<JobContext, 'now' | 'signal' | 'log'>): Promise<RebuildCounts> {
  const counts: RebuildCounts = { indexed: 0, failed: 0, removed: 0, batches: 0 };
  const total = await countReplica(deps.pool);
  ctx.log.info({ adapter: deps.index.kind, total }, 'contact search rebuild started');
  await deps.index.prepare();

  // 1. Every replica row, in id order.
  let after: string | null = null;
  while (!ctx.signal.aborted) {
    const docs = await selectReplicaPage(deps.pool, after, deps.batchSize);
    if (docs.length === 0) break;
    after = docs[docs.length - 1]!.userId;
    counts.batches += 1;
    const { failed } = await deps.index.index(docs);
    if (failed.length > 0) {
      // The indexer takes them over with its backoff; the rebuild goes on.
      const failedIds = new Set(failed.map((f) => f.userId));
      await enqueuePending(deps.pool, docs.filter((d) => failedIds.has(d.userId)), ctx.now());
      deps.metrics.indexFailures.inc({ stage: 'rebuild' }, failed.length);
      counts.failed += failed.length;
    }
    counts.indexed += docs.length - failed.length;
    ctx.log.info(
      { batch: counts.batches, indexed: counts.indexed, failed: counts.failed, total, percent: total ? Math.round(((counts.indexed + counts.failed) / total) * 100) : 100 },
      'contact search rebuild progress',
    );
  }

  // 2. Orphans: documents of users the replica does not have.
  await deps.index.refresh();
  let cursor: string | null = null;
  while (!ctx.signal.aborted) {
    const ids = await deps.index.listUserIds(cursor, deps.batchSize);
    if (ids.length === 0) break;
    cursor = ids[ids.length - 1]!;
    const known = await existingReplicaIds(deps.pool, ids);
    const orphans = ids.filter((id) => !known.has(id));
    if (orphans.length > 0) {
      await deps.index.remove(orphans);
      counts.removed += orphans.length;
    }
  }
  await deps.index.refresh();
  ctx.log.info({ ...counts, total, stopped: ctx.signal.aborted }, 'contact search rebuild finished');
  return counts;
}

export function contactSearchRebuildJob(deps: RebuildDeps & { cron: string }): JobDefinition {
  return {
    name: CONTACT_SEARCH_REBUILD_JOB,
    cron: deps.cron,
    singleRunner: true,
    run: (ctx) => rebuildContactSearch(deps, ctx),
  };
}
