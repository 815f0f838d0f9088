import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { batchPhase, defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import type { FileStore } from './store.ts';

export const FILES_SWEEP_JOB = 'messenger-files-sweep';

interface ExpiredFile {
  id: string;
  objectKey: string;
}

/**
 * The files sweep: a file no message named within FILES_UNSENT_EXPIRY of its upload request
 * (never uploaded, never confirmed, refused, or confirmed and not sent) is deleted, bytes and row.
 * 1. claim: such rows become `Expired` in one statement (no send can take them after that:
 *    fileForMessage takes only Ready ones, and its mark and this claim lock the same row);
 * 2. process: each object is deleted from the store, outside any transaction;
 * 3. record: the rows whose object is gone are deleted. A row whose delete failed stays Expired
 *    and is claimed again by a later batch or run.
 */
export function filesSweepJob(db: Db, store: FileStore, opts: { intervalMs: number; batchSize: number; maxRunMs: number; unsentExpiryMs: number }): BatchWorker {
  return defineBatchWorker<{ cutoff: Date }>({
    name: FILES_SWEEP_JOB,
    every: opts.intervalMs,
    singleRunner: true,
    settings: { batchSize: opts.batchSize, maxRunMs: opts.maxRunMs, concurrency: 4 },
    counts: ['deleted'],
    start: (run) => ({ cutoff: new Date(run.now().getTime() - opts.unsentExpiryMs) }),
    runFields: ({ cutoff }) => ({ cutoff: cutoff.toISOString() }),
    phases: (_run, { cutoff }) => [
      batchPhase<ExpiredFile>({
        name: 'unsent',
        claim: (limit, run, exclude) => claimUnsent(db, cutoff, run.now(), limit, exclude),
        process: async (f) => store.remove(f.objectKey),
        record: async (outcomes, run) => {
          const done = outcomes.filter((o) => o.status === 'done').map((o) => o.row.id);
          if (done.length === 0) return;
          await query(db, sql`delete from messenger.files where id = any(${sql.param(done)}::uuid[]) and status = 'Expired'`);
          run.count('deleted', done.length);
        },
      }),
    ],
  });
}

async function claimUnsent(db: Db, cutoff: Date, now: Date, limit: number, exclude: readonly string[]): Promise<ExpiredFile[]> {
  const { rows } = await query<ExpiredFile>(db, sql`update messenger.files f set status = 'Expired', updated_at = ${now}
    where f.id in (select id from messenger.files
                    where sent_at is null and (status = 'Expired' or created_at < ${cutoff}) and not (id = any(${sql.param([...exclude])}::uuid[]))
                    order by created_at limit ${limit} for update skip locked)
    returning f.id, f.object_key as "objectKey"`);
  return rows;
}
