import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { batchPhase, defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import type { FileStore } from './store.ts';

export const FILES_SWEEP_JOB = 'messenger-files-sweep';

interface ExpiredFile {
  id: string;
  objectKey: string;
}

export interface FilesSweepOptions {
  intervalMs: number;
  batchSize: number;
  maxRunMs: number;
  unsentExpiryMs: number;
  /** How long a `Deleted` file waits before its bytes go (MESSENGER_DEFAULTS.filesDeletedGraceMs). */
  deletedGraceMs: number;
}

/**
 * The files sweep deletes, bytes and row, two kinds of file:
 * - `unsent`: a file no message named within FILES_UNSENT_EXPIRY of its upload request (never
 *   uploaded, never confirmed, refused, or confirmed and not sent). Claim: such rows become
 *   `Expired` in one statement (no send can take them after that: fileForMessage takes only Ready
 *   ones, and its mark and this claim lock the same row).
 * - `deleted`: a file whose every message was deleted. The delete's own transaction made it
 *   `Deleted` (messages.ts), so nothing is lost when the process dies after that commit: the bytes
 *   are this sweep's from then on. No send takes a Deleted file; a send that took it just before
 *   (its mark committed, its message not yet written) writes its message within a request's time,
 *   so a file is claimed only once `deletedGraceMs` have passed since its mark, and one a live
 *   message names by then is Ready again instead.
 * For both: 2. process: each object is deleted from the store, outside any transaction (deleting
 * a missing object is no error, so a repeat is harmless); 3. record: the rows whose object is gone
 * are deleted. A crash or failed delete between the two leaves the row in its status, and a later
 * batch or run claims it again. The row goes last, so bytes never outlive the row that names them.
 */
export function filesSweepJob(db: Db, store: FileStore, opts: FilesSweepOptions): BatchWorker {
  const phase = (name: string, status: 'Expired' | 'Deleted', claim: (limit: number, now: Date, exclude: readonly string[]) => Promise<ExpiredFile[]>) =>
    batchPhase<ExpiredFile>({
      name,
      claim: (limit, run, exclude) => claim(limit, run.now(), exclude),
      process: async (f) => store.remove(f.objectKey),
      record: async (outcomes, run) => {
        const done = outcomes.filter((o) => o.status === 'done').map((o) => o.row.id);
        if (done.length === 0) return;
        await query(db, sql`delete from messenger.files where id = any(${sql.param(done)}::uuid[]) and status = ${status}`);
        run.count('deleted', done.length);
      },
    });
  return defineBatchWorker<{ cutoff: Date; deletedBefore: Date }>({
    name: FILES_SWEEP_JOB,
    every: opts.intervalMs,
    singleRunner: true,
    settings: { batchSize: opts.batchSize, maxRunMs: opts.maxRunMs, concurrency: 4 },
    counts: ['deleted'],
    start: (run) => ({
      cutoff: new Date(run.now().getTime() - opts.unsentExpiryMs),
      deletedBefore: new Date(run.now().getTime() - opts.deletedGraceMs),
    }),
    runFields: ({ cutoff }) => ({ cutoff: cutoff.toISOString() }),
    phases: (_run, { cutoff, deletedBefore }) => [
      phase('unsent', 'Expired', (limit, now, exclude) => claimUnsent(db, cutoff, now, limit, exclude)),
      phase('deleted', 'Deleted', (limit, now, exclude) => claimDeleted(db, deletedBefore, now, limit, exclude)),
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

const namedByLiveMessage = sql.raw(`exists (select 1 from messenger.messages m
  where m.file_meta is not null and m.file_meta->>'fileId' = f.id::text and m.chat_id = f.chat_id and m.deleted_at is null)`);

/** Deleted files marked before `deletedBefore` that no live message names; those one names are Ready again. */
async function claimDeleted(db: Db, deletedBefore: Date, now: Date, limit: number, exclude: readonly string[]): Promise<ExpiredFile[]> {
  await query(db, sql`update messenger.files f set status = 'Ready', updated_at = ${now}
    where f.status = 'Deleted' and f.updated_at < ${deletedBefore} and ${namedByLiveMessage}`);
  const { rows } = await query<ExpiredFile>(db, sql`select f.id, f.object_key as "objectKey" from messenger.files f
    where f.status = 'Deleted' and f.updated_at < ${deletedBefore} and not ${namedByLiveMessage}
      and not (f.id = any(${sql.param([...exclude])}::uuid[]))
    order by f.updated_at limit ${limit}`);
  return rows;
}
