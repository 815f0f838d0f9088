import { Type } from '@sinclair/typebox';
import { Bool, Duration, formatDuration, type SettingsOf } from '../../../platform/types/index.ts';
import { FILE_MAX_BYTES } from '../messages/rules.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

/**
 * Settings of the messenger's files: the S3-compatible object store that holds a File message's
 * bytes (Amazon S3, Cloudflare R2, Google Cloud Storage's XML API, or the local store
 * scripts/objectstore.sh starts), the upload limit, how long an unsent file is kept and the quarantine
 * hold. The store's region and credentials are the AWS SDK's own default chain (AWS_REGION,
 * AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a shared profile or an instance role), not ours to list;
 * the URL lifetimes are fixed values (defaults.ts).
 * Spread into the service's one settings schema by src/config.ts and into the messenger module's.
 * FILES_S3_BUCKET unset: no store, and every file route answers 503 FILES_NOT_CONFIGURED, so
 * `npm start` still needs nothing (`npm run services:up` starts a local store and prints these).
 */
export const messengerFilesSettings = {
  FILES_S3_BUCKET: Type.Optional(
    Type.String({
      pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
      examples: ['pin-files'],
      description: 'Bucket of the File messages\' bytes; unset = no file storage (file routes answer 503 FILES_NOT_CONFIGURED)',
    }),
  ),
  FILES_S3_ENDPOINT: Type.Optional(
    Type.String({
      pattern: '^https?://[^\\s/?#]+/?$',
      examples: ['http://127.0.0.1:19000', 'https://<account>.r2.cloudflarestorage.com', 'https://storage.googleapis.com'],
      description: 'The S3 API endpoint, also the host of the presigned URLs clients use; unset = Amazon S3 (the region and credentials are the AWS SDK\'s default chain: AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, or an instance role)',
    }),
  ),
  FILES_MAX_BYTES: Type.Integer({
    default: MESSENGER_DEFAULTS.fileMaxBytes,
    minimum: 1,
    maximum: FILE_MAX_BYTES,
    description: 'Largest file an upload may declare, in bytes (100 MiB by default, at most 2 GiB); the presigned PUT binds the declared size',
  }),
  FILES_UNSENT_EXPIRY: Duration({
    default: MESSENGER_DEFAULTS.fileUnsentExpiryMs,
    minimum: '1m',
    maximum: '30d',
    description: 'A file no message names this long after its upload was asked for is deleted (row and bytes) by the files sweep; at least a presigned upload URL\'s lifetime (15 min)',
  }),
  FILES_QUARANTINE: Bool(
    false,
    'Hold every confirmed file as Quarantined until a scanner releases or rejects it (admin routes /api/messenger/admin/files/…); a held file cannot be sent or downloaded',
  ),
};

export type MessengerFilesSettings = SettingsOf<typeof messengerFilesSettings>;

/** What no one field can say (loadConfig reports them with every other bad setting). */
export function filesSettingProblems(s: MessengerFilesSettings): string[] {
  const problems: string[] = [];
  if (s.FILES_UNSENT_EXPIRY < MESSENGER_DEFAULTS.fileUploadUrlTtlMs) {
    problems.push(`FILES_UNSENT_EXPIRY: must be at least a presigned upload URL's lifetime (${formatDuration(MESSENGER_DEFAULTS.fileUploadUrlTtlMs)}), or an upload could be swept while its URL still works`);
  }
  return problems;
}

/** Where the bytes are: undefined when FILES_S3_BUCKET is unset. */
export interface FileStoreOptions {
  bucket: string;
  endpoint: string | undefined;
  forcePathStyle: boolean;
  /** A client of the test store passes its own; the service leaves both to the AWS SDK's default chain. */
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** The files part's options, in its own words (the parts read these, never a setting's name). */
export interface FilesOptions {
  store: FileStoreOptions | undefined;
  maxBytes: number;
  uploadUrlTtlMs: number;
  downloadUrlTtlMs: number;
  unsentExpiryMs: number;
  quarantine: boolean;
}

export function filesOptionsOf(s: MessengerFilesSettings): FilesOptions {
  return {
    store:
      s.FILES_S3_BUCKET === undefined
        ? undefined
        : {
            bucket: s.FILES_S3_BUCKET,
            endpoint: s.FILES_S3_ENDPOINT,
            // A store at its own endpoint (the local one, R2, GCS, MinIO) is addressed by path, which each
            // of them serves; Amazon S3 itself (no endpoint) by host name, as AWS asks.
            forcePathStyle: s.FILES_S3_ENDPOINT !== undefined,
          },
    maxBytes: s.FILES_MAX_BYTES,
    uploadUrlTtlMs: MESSENGER_DEFAULTS.fileUploadUrlTtlMs,
    downloadUrlTtlMs: MESSENGER_DEFAULTS.fileDownloadUrlTtlMs,
    unsentExpiryMs: s.FILES_UNSENT_EXPIRY,
    quarantine: s.FILES_QUARANTINE,
  };
}
