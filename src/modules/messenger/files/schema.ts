import { sql } from 'drizzle-orm';
import { bigint, check, index, text, uuid, varchar } from 'drizzle-orm/pg-core';
import { messengerSchema, oneOf, timestamptz as ts } from '../schema.ts';
import { FILE_STATUSES } from './file-status.ts';

/**
 * Files of File messages whose bytes the service keeps in its object store (drizzle part
 * `messenger`, listed in drizzle.config.ts). No foreign key to messenger.chats: that table migrates
 * in the later part `messenger.realtime`, and a chat is never deleted while its files live (the
 * sweep deletes the files nobody sent, and those whose every message was deleted).
 */
export const files = messengerSchema.table(
  'files',
  {
    /** The id the server issued; the only thing a File message names. */
    id: uuid('id').primaryKey(),
    chatId: uuid('chat_id').notNull(),
    uploaderUserId: uuid('uploader_user_id').notNull(),
    /** Where the bytes are in the bucket: chosen by the server, never from the client's name. */
    objectKey: text('object_key').notNull(),
    fileName: text('file_name').notNull(),
    /** The type the uploader declared and the store was told to require (a signed Content-Type). */
    contentType: varchar('content_type', { length: 255 }).notNull(),
    /** The size the uploader declared and the store was told to require (a signed Content-Length). */
    declaredSize: bigint('declared_size', { mode: 'number' }).notNull(),
    /** The size the store reported at confirmation; null until then. */
    size: bigint('size', { mode: 'number' }),
    status: varchar('status', { length: 16 }).notNull(),
    /** Why a confirmation or a scanner refused the file (a fixed phrase, never the file's bytes). */
    rejectReason: text('reject_reason'),
    createdAt: ts('created_at').notNull(),
    /** When the presigned PUT stops working. */
    uploadExpiresAt: ts('upload_expires_at').notNull(),
    confirmedAt: ts('confirmed_at'),
    /** The last time a message named the file (set before the message is written); null = never sent. */
    sentAt: ts('sent_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    check('ck_files_status', oneOf(t.status, FILE_STATUSES)),
    check('ck_files_sizes', sql`${t.declaredSize} >= 0 and (${t.size} is null or ${t.size} >= 0)`),
    // The sweep's scan: files never sent, oldest first.
    index('ix_files_unsent').on(t.createdAt).where(sql`${t.sentAt} is null`),
    // The sweep's second scan: files whose every message was deleted, oldest mark first.
    index('ix_files_deleted').on(t.updatedAt).where(sql`${t.status} = 'Deleted'`),
    // The scanner's queue, paged by id.
    index('ix_files_quarantined').on(t.id).where(sql`${t.status} = 'Quarantined'`),
  ],
);
