import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import type { Principal } from '../../../platform/http/index.ts';
import { newId, type Clock } from '../../../platform/time.ts';
import type { Logger } from '../../../platform/observability/index.ts';
import { ChatErrors } from '../errors.ts';
import { ALLOWED_FILE_TYPE_SUMMARY, isAllowedFileType } from '../messages/file-types.ts';
import type { FileMeta } from '../messages/rules.ts';
import { FileErrors } from './errors.ts';
import type { FileStatus } from './file-status.ts';
import type { FilesOptions } from './settings.ts';
import { SNIFF_BYTES, typeMismatch } from './sniff.ts';
import type { FileStore } from './store.ts';

/**
 * A File message's bytes are the service's: a member asks for an upload and gets a
 * presigned PUT bound to the declared size and type; confirming reads the object's real size and
 * sniffs its type; a message names the file only by the id issued here, and its metadata comes
 * from this row; members get short-lived download URLs. Rows live in messenger.files, bytes in the
 * store under a key of the server's choosing (never the client's name).
 */
export interface FilesDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  /** Undefined when FILES_S3_BUCKET is unset: every file route answers 503 FILES_NOT_CONFIGURED. */
  store: FileStore | undefined;
  options: FilesOptions;
}

export interface FileRow {
  id: string;
  chatId: string;
  uploaderUserId: string;
  objectKey: string;
  fileName: string;
  contentType: string;
  declaredSize: number;
  size: number | null;
  status: FileStatus;
  createdAt: Date;
  confirmedAt: Date | null;
  sentAt: Date | null;
}

export const FILE_COLUMNS = sql.raw(`id, chat_id as "chatId", uploader_user_id as "uploaderUserId", object_key as "objectKey",
  file_name as "fileName", content_type as "contentType", declared_size::float8 as "declaredSize", size::float8 as size, status,
  created_at as "createdAt", confirmed_at as "confirmedAt", sent_at as "sentAt"`);

export interface FileView {
  fileId: string;
  chatId: string;
  fileName: string;
  contentType: string;
  size: number;
  status: FileStatus;
  createdAt: string;
  confirmedAt: string | null;
}

export const fileView = (f: FileRow): FileView => ({
  fileId: f.id,
  chatId: f.chatId,
  fileName: f.fileName,
  contentType: f.contentType,
  size: f.size ?? f.declaredSize,
  status: f.status,
  createdAt: f.createdAt.toISOString(),
  confirmedAt: f.confirmedAt?.toISOString() ?? null,
});

export const storeOf = (deps: FilesDeps): FileStore => deps.store ?? (() => { throw FileErrors.notConfigured(); })();

const isMember = (db: Db, chatId: string, userId: string) =>
  query<{ member: boolean }>(db, sql`select exists (select 1 from messenger.chat_participants
    where chat_id = ${chatId} and user_id = ${userId} and status = 'Active') as member`).then((r) => r.rows[0]!.member);

/** The caller's own file in this chat, or 404. */
async function ownFile(deps: FilesDeps, caller: Principal, chatId: string, fileId: string): Promise<FileRow> {
  const { rows } = await query<FileRow>(deps.db, sql`select ${FILE_COLUMNS} from messenger.files
    where id = ${fileId} and chat_id = ${chatId} and uploader_user_id = ${caller.userId}`);
  if (!rows[0]) throw FileErrors.notFound();
  return rows[0];
}

export interface UploadRequest {
  fileName: string;
  contentType: string;
  size: number;
}

export interface UploadTicket {
  fileId: string;
  uploadUrl: string;
  method: 'PUT';
  headers: { 'Content-Type': string };
  expiresAt: string;
}

/** POST …/files: a member of the chat reserves a file id and gets its presigned PUT. */
export async function requestUpload(deps: FilesDeps, caller: Principal, chatId: string, req: UploadRequest): Promise<UploadTicket> {
  const store = storeOf(deps);
  const contentType = req.contentType.toLowerCase();
  if (!isAllowedFileType(contentType)) throw FileErrors.typeNotAllowed(`contentType ${contentType} is not one a File message may carry: ${ALLOWED_FILE_TYPE_SUMMARY}`);
  if (req.size > deps.options.maxBytes) throw FileErrors.tooLarge(deps.options.maxBytes);
  if (!(await isMember(deps.db, chatId, caller.userId))) throw ChatErrors.chatNotFound();
  const id = newId();
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + deps.options.uploadUrlTtlMs);
  const objectKey = `chats/${chatId}/${id}`;
  await query(deps.db, sql`insert into messenger.files
      (id, chat_id, uploader_user_id, object_key, file_name, content_type, declared_size, status, created_at, upload_expires_at, updated_at)
    values (${id}, ${chatId}, ${caller.userId}, ${objectKey}, ${req.fileName}, ${contentType}, ${req.size}, 'Pending', ${now}, ${expiresAt}, ${now})`);
  const uploadUrl = await store.presignPut(objectKey, req.size, contentType, deps.options.uploadUrlTtlMs);
  return { fileId: id, uploadUrl, method: 'PUT', headers: { 'Content-Type': contentType }, expiresAt: expiresAt.toISOString() };
}

/** Refuses a file whose upload does not hold what was declared: its bytes deleted, its row Rejected. */
async function refuse(deps: FilesDeps, store: FileStore, f: FileRow, reason: string, error: Error): Promise<never> {
  await store.remove(f.objectKey);
  await query(deps.db, sql`update messenger.files set status = 'Rejected', reject_reason = ${reason}, updated_at = ${deps.clock.now()}
    where id = ${f.id} and status = 'Pending'`);
  throw error;
}

/**
 * POST …/files/{fileId}/complete: the uploader says the PUT is done. The store's size must be the
 * declared one and the first bytes must agree with the declared type (sniff.ts); then the file is
 * Ready, or Quarantined with FILES_QUARANTINE on. Confirming again answers the file as it is.
 */
export async function completeUpload(deps: FilesDeps, caller: Principal, chatId: string, fileId: string): Promise<FileView> {
  const store = storeOf(deps);
  const f = await ownFile(deps, caller, chatId, fileId);
  if (f.status !== 'Pending') return settled(f);
  const size = await store.size(f.objectKey);
  if (size === undefined) throw FileErrors.notUploaded();
  if (size !== f.declaredSize || size > deps.options.maxBytes) {
    return refuse(deps, store, f, 'size mismatch', FileErrors.sizeMismatch(f.declaredSize, size));
  }
  const mismatch = await typeMismatch(f.contentType, await store.head(f.objectKey, Math.min(SNIFF_BYTES, Math.max(size, 1))));
  if (mismatch) return refuse(deps, store, f, 'type mismatch', FileErrors.typeMismatch(mismatch));
  const now = deps.clock.now();
  const status: FileStatus = deps.options.quarantine ? 'Quarantined' : 'Ready';
  const { rows } = await query<FileRow>(deps.db, sql`update messenger.files set status = ${status}, size = ${size}, confirmed_at = ${now}, updated_at = ${now}
    where id = ${f.id} and status = 'Pending' returning ${FILE_COLUMNS}`);
  // A concurrent confirmation (or the sweep) got there first: answer what it left.
  return rows[0] ? fileView(rows[0]) : settled(await ownFile(deps, caller, chatId, fileId));
}

/** A confirmation of a file past Pending: its view, or the refusal its state is. */
function settled(f: FileRow): FileView {
  // Every message that named it was deleted: gone, as for any unknown file.
  if (f.status === 'Deleted') throw FileErrors.notFound();
  if (f.status === 'Rejected') throw FileErrors.rejected();
  if (f.status === 'Expired') throw FileErrors.expired();
  if (f.status === 'Pending') throw FileErrors.notReady();
  return fileView(f);
}

/** The refusal for a file that cannot be sent or downloaded in its state. */
function unusable(status: FileStatus): Error {
  switch (status) {
    case 'Pending': return FileErrors.notReady();
    case 'Quarantined': return FileErrors.quarantined();
    case 'Rejected': return FileErrors.rejected();
    case 'Deleted': return FileErrors.notFound();
    default: return FileErrors.expired();
  }
}

export interface DownloadTicket {
  url: string;
  expiresAt: string;
  fileName: string;
  contentType: string;
  size: number;
}

/**
 * GET …/files/{fileId}/download: a presigned GET for an Active member of the chat, of a Ready
 * file a live message they can read names (its uploader may fetch it before sending). Anyone else
 * — a stranger, the member a Direct chat's messages naming it are withheld from (the blocker of its
 * sender: docs/security.md, "Consent"), anyone once every message naming it was deleted: 404.
 */
export async function downloadFile(deps: FilesDeps, caller: Principal, chatId: string, fileId: string): Promise<DownloadTicket> {
  const store = storeOf(deps);
  const { rows } = await query<FileRow>(deps.db, sql`select ${FILE_COLUMNS} from messenger.files f
    where id = ${fileId} and chat_id = ${chatId}
      and ((uploader_user_id = ${caller.userId} and status <> 'Deleted')
        or exists (select 1 from messenger.messages m where m.file_meta is not null and m.file_meta->>'fileId' = ${fileId}
                     and m.chat_id = f.chat_id and m.deleted_at is null and m.withheld_from is distinct from ${caller.userId}))
      and exists (select 1 from messenger.chat_participants p where p.chat_id = f.chat_id and p.user_id = ${caller.userId} and p.status = 'Active')`);
  const f = rows[0];
  if (!f) throw FileErrors.notFound();
  if (f.status !== 'Ready') throw unusable(f.status);
  return downloadTicket(deps, store, f);
}

export async function downloadTicket(deps: FilesDeps, store: FileStore, f: FileRow): Promise<DownloadTicket> {
  const ttl = deps.options.downloadUrlTtlMs;
  const url = await store.presignGet(f.objectKey, { fileName: f.fileName, contentType: f.contentType }, ttl);
  const size = f.size ?? f.declaredSize;
  return { url, expiresAt: new Date(deps.clock.now().getTime() + ttl).toISOString(), fileName: f.fileName, contentType: f.contentType, size };
}

/**
 * A File message's metadata, from the row of the file it names: the caller's own Ready file of this
 * chat, not past FILES_UNSENT_EXPIRY unless already sent. Marks it sent first (`sent_at`), in one
 * statement that the sweep's claim cannot interleave with, so a file being sent is never swept.
 */
export async function fileForMessage(deps: FilesDeps, caller: Principal, chatId: string, fileId: string): Promise<FileMeta> {
  storeOf(deps);
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - deps.options.unsentExpiryMs);
  const { rows } = await query<FileRow>(deps.db, sql`update messenger.files set sent_at = ${now}, updated_at = ${now}
    where id = ${fileId} and chat_id = ${chatId} and uploader_user_id = ${caller.userId} and status = 'Ready'
      and (sent_at is not null or created_at > ${cutoff})
    returning ${FILE_COLUMNS}`);
  const f = rows[0];
  if (!f) {
    const own = await ownFile(deps, caller, chatId, fileId);
    throw own.status === 'Ready' ? FileErrors.expired() : unusable(own.status);
  }
  return { fileId: f.id, fileName: f.fileName, contentType: f.contentType, size: f.size ?? f.declaredSize };
}

