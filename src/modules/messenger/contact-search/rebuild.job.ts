import type { Db } from '../../../platform/db/index.ts';
import { errorText } from '../../../platform/errors/index.ts';
import { batchPhase, defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import type { ContactSearchMetrics } from './metrics.ts';
import type { ContactSearchIndex, MessengerContactSearchDocument } from './port.ts';
import { countReplica, enqueuePending, existingReplicaIds, selectReplicaPage } from './sql.ts';

export const CONTACT_SEARCH_REBUILD_JOB = 'messenger-contact-search-rebuild';


export interface RebuildDeps {
  db: Db;
  index: ContactSearchIndex;
  metrics: ContactSearchMetrics;
  batchSize: number;
  cron: string;
  /** A whole pass over the replica and the index; bounded only so a stuck run ends long before the next night's. */
  maxRunMs: number;
}

/** One run's cursors: the last replica row and the last index document handled. */
interface RebuildRun {
  total: number | null;
  replicaAfter: string | null;
  documentsAfter: string | null;
  orphanScanStarted: boolean;
}

/**
 * MessengerContactSearchRebuildJob (seed 002 step 6): reconciles the whole contact search index
 * with the replica, in two phases with their own cursors:
 *
 *   1. every replica row, in id order, written in bulk batches (external versioning keeps a newer
 *      document the indexer wrote meanwhile); documents the index refuses are handed to the
 *      indexer's queue, which retries them with its backoff; progress is logged per batch;
 *   2. documents whose user is not in the replica (orphans) are deleted.
 *
 * Run on its cron, or now through POST /api/ops/jobs/messenger-contact-search-rebuild/run (after
 * an index was lost or recreated).
 */
export function contactSearchRebuildJob(deps: RebuildDeps): BatchWorker {
  const { db, index, metrics } = deps;

  /** Counted when the first batch is claimed (the kernel's start hook is synchronous), then the index is prepared. */
  async function begin(state: RebuildRun): Promise<number> {
    state.total = await countReplica(db);
    await index.prepare();
    return state.total;
  }

  const replicaPhase = (state: RebuildRun) =>
    batchPhase<MessengerContactSearchDocument>({
      name: 'replica',
      keyOf: (d) => d.userId,
      async claim(limit) {
        if (state.total === null) await begin(state);
        const docs = await selectReplicaPage(db, state.replicaAfter, limit);
        state.replicaAfter = docs.at(-1)?.userId ?? state.replicaAfter;
        return docs;
      },
      async processBatch(docs, run) {
        const { failed } = await index.index(docs);
        const reasons = new Map(failed.map((f) => [f.userId, f.reason]));
        run.count('indexed', docs.length - failed.length);
        run.count('replicaBatches');
        const { indexed = 0, replicaBatches } = run.counts;
        const failedSoFar = run.counts.failed + failed.length;
        const total = state.total ?? 0;
        run.log.info(
          { batch: replicaBatches, indexed, failed: failedSoFar, total, percent: total ? Math.round(((indexed + failedSoFar) / total) * 100) : 100 },
          'contact search rebuild progress',
        );
        return docs.map((row) => {
          const reason = reasons.get(row.userId);
          return reason === undefined ? { row, status: 'done', result: undefined } : { row, status: 'failed', error: { message: reason.slice(0, 200) } };
        });
      },
      // The indexer takes the refused documents over with its backoff; the rebuild goes on.
      async record(outcomes, run) {
        const refused = outcomes.filter((o) => o.status === 'failed').map((o) => o.row);
        if (refused.length === 0) return;
        await enqueuePending(db, refused, run.now());
        metrics.indexFailures.inc({ stage: 'rebuild' }, refused.length);
      },
    });

  const orphanPhase = (state: RebuildRun) =>
    batchPhase<string>({
      name: 'orphans',
      keyOf: (id) => id,
      async claim(limit) {
        if (!state.orphanScanStarted) {
          await index.refresh();
          state.orphanScanStarted = true;
        }
        const ids = await index.listUserIds(state.documentsAfter, limit);
        state.documentsAfter = ids.at(-1) ?? state.documentsAfter;
        return ids;
      },
      async processBatch(ids, run) {
        const known = await existingReplicaIds(db, ids);
        const orphans = ids.filter((id) => !known.has(id));
        if (orphans.length > 0) await index.remove(orphans);
        run.count('removed', orphans.length);
        return ids.map((row) => ({ row, status: 'done', result: undefined }));
      },
    });

  return defineBatchWorker<RebuildRun>({
    name: CONTACT_SEARCH_REBUILD_JOB,
    cron: deps.cron,
    singleRunner: true,
    settings: { batchSize: deps.batchSize, maxRunMs: deps.maxRunMs },
    counts: ['indexed', 'removed', 'replicaBatches'],
    start: () => ({ total: null, replicaAfter: null, documentsAfter: null, orphanScanStarted: false }),
    // On the kernel's `job started` / `job completed` lines.
    runFields: ({ total }) => ({ adapter: index.kind, ...(total === null ? {} : { total }) }),
    phases: (_run, state) => [replicaPhase(state), orphanPhase(state)],
    async finish(run, state) {
      if (state.total === null) return;
      // Best effort: the index makes the writes searchable on its own shortly anyway.
      await index.refresh().catch((err: unknown) => run.log.warn({ err: { message: errorText(err, { root: false, name: false }) } }, 'contact search refresh after the rebuild failed'));
    },
  });
}
