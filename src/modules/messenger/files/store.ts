import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { FileStoreOptions } from './settings.ts';

/**
 * The object store of the files' bytes, over the AWS SDK v3 (any S3-compatible store: S3, R2,
 * GCS's XML API, the local one of scripts/objectstore.sh). Clients move the bytes themselves
 * through presigned URLs; the service only signs them, reads an object's size and first bytes at
 * confirmation, and deletes objects.
 */
export interface FileStore {
  /**
   * A PUT URL that the store honours only with exactly this Content-Length and Content-Type (both
   * signed headers): a bigger body, or another type, fails the signature (403).
   */
  presignPut(key: string, size: number, contentType: string, ttlMs: number): Promise<string>;
  /** A GET URL that answers the bytes as an attachment of this type and name, so a browser never renders them inline. */
  presignGet(key: string, download: { fileName: string; contentType: string }, ttlMs: number): Promise<string>;
  /** The object's size, or undefined when there is no such object. */
  size(key: string): Promise<number | undefined>;
  /** Up to `bytes` first bytes of the object (for sniffing its type). */
  head(key: string, bytes: number): Promise<Uint8Array>;
  /** Deletes the object; no object is no error. */
  remove(key: string): Promise<void>;
  close(): void;
}

export function createFileStore(o: FileStoreOptions): FileStore {
  const client = new S3Client({
    // Unset: the SDK's default chain (AWS_REGION, a shared profile; credentials also an instance role).
    ...(o.region === undefined ? {} : { region: o.region }),
    ...(o.endpoint === undefined ? {} : { endpoint: o.endpoint }),
    forcePathStyle: o.forcePathStyle,
    ...(o.credentials === undefined ? {} : { credentials: o.credentials }),
    // Checksums only where the API requires one: a presigned PUT that carried the SDK's default
    // checksum (of an empty body) would be refused for every real upload.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
  });
  const Bucket = o.bucket;
  const seconds = (ms: number) => Math.max(1, Math.floor(ms / 1000));
  return {
    presignPut: (Key, size, contentType, ttlMs) =>
      getSignedUrl(client, new PutObjectCommand({ Bucket, Key, ContentLength: size, ContentType: contentType }), {
        expiresIn: seconds(ttlMs),
        // The presigner leaves both out of the signature by default; signed, the store enforces them.
        signableHeaders: new Set(['content-length', 'content-type']),
      }),
    presignGet: (Key, { fileName, contentType }, ttlMs) =>
      getSignedUrl(
        client,
        new GetObjectCommand({ Bucket, Key, ResponseContentType: contentType, ResponseContentDisposition: attachment(fileName) }),
        { expiresIn: seconds(ttlMs) },
      ),
    async size(Key) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket, Key }));
        return head.ContentLength ?? 0;
      } catch (err) {
        if (notFound(err)) return undefined;
        throw err;
      }
    },
    async head(Key, bytes) {
      const res = await client.send(new GetObjectCommand({ Bucket, Key, Range: `bytes=0-${bytes - 1}` }));
      return res.Body ? (await res.Body.transformToByteArray()).subarray(0, bytes) : new Uint8Array();
    },
    async remove(Key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key }));
    },
    close: () => client.destroy(),
  };
}

/** A HEAD of a missing object answers 404 with no body, so the SDK names it NotFound (NoSuchKey on a GET). */
const notFound = (err: unknown): boolean =>
  err instanceof S3ServiceException && (err.$metadata.httpStatusCode === 404 || err.name === 'NotFound' || err.name === 'NoSuchKey');

/**
 * Content-Disposition of a download (RFC 6266): `attachment`, an ASCII fallback name (anything
 * outside printable ASCII, quotes and backslashes replaced) and the exact name as RFC 5987 UTF-8.
 */
export function attachment(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}
