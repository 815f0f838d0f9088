import { sql } from 'drizzle-orm';
import { query } from '../../../platform/db/index.ts';
import { FileErrors } from './errors.ts';
import { downloadTicket, FILE_COLUMNS, fileView, storeOf, type DownloadTicket, type FileRow, type FilesDeps, type FileView } from './files.ts';

/**
 * The quarantine hook (FILES_QUARANTINE), as Synapse's media checks hold media for a scanner: a
 * confirmed file waits as Quarantined, unsendable and undownloadable, until a scanner (an admin
 * token) reads its bytes through the listed URL and releases it (Ready) or rejects it (Rejected,
 * its bytes deleted at once).
 */

export interface QuarantinedFile extends FileView {
  /** A presigned GET of the bytes, for the scanner. */
  download: DownloadTicket;
}

/** Quarantined files, oldest confirmation first, after the file id `after` (keyset page). */
export async function listQuarantined(deps: FilesDeps, page: { after?: string; limit: number }): Promise<{ items: QuarantinedFile[]; nextAfter: string | null }> {
  const store = storeOf(deps);
  const { rows } = await query<FileRow>(deps.db, sql`select ${FILE_COLUMNS} from messenger.files
    where status = 'Quarantined' and (${page.after ?? null}::uuid is null or id > ${page.after ?? null}::uuid)
    order by id limit ${page.limit}`);
  const items = await Promise.all(rows.map(async (f) => ({ ...fileView(f), download: await downloadTicket(deps, store, f) })));
  return { items, nextAfter: rows.length === page.limit ? rows[rows.length - 1]!.id : null };
}

async function quarantined(deps: FilesDeps, fileId: string): Promise<FileRow> {
  const { rows } = await query<FileRow>(deps.db, sql`select ${FILE_COLUMNS} from messenger.files where id = ${fileId}`);
  const f = rows[0];
  if (!f) throw FileErrors.notFound();
  if (f.status !== 'Quarantined') throw FileErrors.notQuarantined(f.status);
  return f;
}

/** The scanner found the file clean: it becomes Ready (sendable, downloadable). */
export async function releaseFile(deps: FilesDeps, fileId: string): Promise<FileView> {
  storeOf(deps);
  await quarantined(deps, fileId);
  const now = deps.clock.now();
  const { rows } = await query<FileRow>(deps.db, sql`update messenger.files set status = 'Ready', updated_at = ${now}
    where id = ${fileId} and status = 'Quarantined' returning ${FILE_COLUMNS}`);
  if (!rows[0]) return releaseFile(deps, fileId); // changed meanwhile: answer its new state's refusal
  deps.log.info({ fileId }, 'quarantined file released');
  return fileView(rows[0]);
}

/** The scanner refused the file: Rejected for good, its bytes deleted now (the sweep removes the row later). */
export async function rejectFile(deps: FilesDeps, fileId: string): Promise<FileView> {
  const store = storeOf(deps);
  await quarantined(deps, fileId);
  const now = deps.clock.now();
  const { rows } = await query<FileRow>(deps.db, sql`update messenger.files set status = 'Rejected', reject_reason = 'rejected by a scanner', updated_at = ${now}
    where id = ${fileId} and status = 'Quarantined' returning ${FILE_COLUMNS}`);
  if (!rows[0]) return rejectFile(deps, fileId);
  await store.remove(rows[0].objectKey);
  deps.log.info({ fileId }, 'quarantined file rejected');
  return fileView(rows[0]);
}
