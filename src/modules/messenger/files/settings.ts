import { Type } from '@sinclair/typebox';
import { Bool, Duration, formatDuration, type SettingsOf } from '../../../platform/types/index.ts';
import { FILE_MAX_BYTES } from '../messages/rules.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

/**
 * Settings of the messenger's files: the S3-compatible object store that holds a File message's
 * bytes (Amazon S3, Cloudflare R2, Google Cloud Storage's XML API, or the local store
 * scripts/objectstore.sh starts), the upload limit, the URL lifetimes and the quarantine hold.
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
      description: 'The S3 API endpoint, also the host of the presigned URLs clients use; unset = Amazon S3 in FILES_S3_REGION',
    }),
  ),
  FILES_S3_REGION: Type.String({
    default: 'us-east-1',
    pattern: '^[a-z0-9-]{1,32}$',
    description: 'Region the requests are signed for (R2: auto; GCS: its location or auto)',
  }),
  FILES_S3_ACCESS_KEY_ID: Type.Optional(
    Type.String({ pattern: '^[\\x21-\\x7e]{1,128}$', description: 'Access key id; unset with FILES_S3_SECRET_ACCESS_KEY = the SDK\'s default chain (an instance role, AWS_* variables)' }),
  ),
  FILES_S3_SECRET_ACCESS_KEY: Type.Optional(
    Type.String({ pattern: '^[\\x21-\\x7e]{1,256}$', description: 'Secret access key; set with FILES_S3_ACCESS_KEY_ID or not at all' }),
  ),
  FILES_MAX_BYTES: Type.Integer({
    default: MESSENGER_DEFAULTS.fileMaxBytes,
    minimum: 1,
    maximum: FILE_MAX_BYTES,
    description: 'Largest file an upload may declare, in bytes (100 MiB by default, at most 2 GiB); the presigned PUT binds the declared size',
  }),
  FILES_UPLOAD_URL_TTL: Duration({
    default: MESSENGER_DEFAULTS.fileUploadUrlTtlMs,
    minimum: '10s',
    maximum: '12h',
    description: 'Lifetime of a presigned upload (PUT) URL',
  }),
  FILES_UNSENT_EXPIRY: Duration({
    default: MESSENGER_DEFAULTS.fileUnsentExpiryMs,
    minimum: '1m',
    maximum: '30d',
    description: 'A file no message names this long after its upload was asked for is deleted (row and bytes) by the files sweep; at least FILES_UPLOAD_URL_TTL',
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
  if ((s.FILES_S3_ACCESS_KEY_ID === undefined) !== (s.FILES_S3_SECRET_ACCESS_KEY === undefined)) {
    problems.push('FILES_S3_ACCESS_KEY_ID: set with FILES_S3_SECRET_ACCESS_KEY, or neither (the SDK\'s default credentials)');
  }
  if (s.FILES_UNSENT_EXPIRY < s.FILES_UPLOAD_URL_TTL) {
    problems.push(`FILES_UNSENT_EXPIRY: must be at least FILES_UPLOAD_URL_TTL (${formatDuration(s.FILES_UPLOAD_URL_TTL)}), or an upload could be swept while its URL still works`);
  }
  return problems;
}

/** Where the bytes are: undefined when FILES_S3_BUCKET is unset. */
export interface FileStoreOptions {
  bucket: string;
  endpoint: string | undefined;
  region: string;
  forcePathStyle: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
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
  const { FILES_S3_ACCESS_KEY_ID: accessKeyId, FILES_S3_SECRET_ACCESS_KEY: secretAccessKey } = s;
  return {
    store:
      s.FILES_S3_BUCKET === undefined
        ? undefined
        : {
            bucket: s.FILES_S3_BUCKET,
            endpoint: s.FILES_S3_ENDPOINT,
            region: s.FILES_S3_REGION,
            // A store at its own endpoint (the local one, R2, GCS, MinIO) is addressed by path, which each
            // of them serves; Amazon S3 itself (no endpoint) by host name, as AWS asks.
            forcePathStyle: s.FILES_S3_ENDPOINT !== undefined,
            credentials: accessKeyId !== undefined && secretAccessKey !== undefined ? { accessKeyId, secretAccessKey } : undefined,
          },
    maxBytes: s.FILES_MAX_BYTES,
    uploadUrlTtlMs: s.FILES_UPLOAD_URL_TTL,
    downloadUrlTtlMs: MESSENGER_DEFAULTS.fileDownloadUrlTtlMs,
    unsentExpiryMs: s.FILES_UNSENT_EXPIRY,
    quarantine: s.FILES_QUARANTINE,
  };
}
