import { createFileStore, type FileStore } from '../../src/modules/messenger/files/store.ts';

/**
 * The S3-compatible object store `npm test` starts (scripts/objectstore.sh, versitygw): its
 * FILES_S3_* settings as scripts/services.sh printed them, for an app under test, and a client of
 * the same store to look at what it holds.
 */
const NAMES = ['FILES_S3_ENDPOINT', 'FILES_S3_BUCKET', 'FILES_S3_REGION', 'FILES_S3_ACCESS_KEY_ID', 'FILES_S3_SECRET_ACCESS_KEY'] as const;

export function objectStoreEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of NAMES) {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is unset: run the tests with \`npm test\` (it starts the object store)`);
    env[name] = value;
  }
  return env;
}

/** A client of the test store (the service's own adapter), to check which objects exist. */
export function objectStore(): FileStore {
  const env = objectStoreEnv();
  return createFileStore({
    bucket: env.FILES_S3_BUCKET!,
    endpoint: env.FILES_S3_ENDPOINT,
    region: env.FILES_S3_REGION!,
    forcePathStyle: true,
    credentials: { accessKeyId: env.FILES_S3_ACCESS_KEY_ID!, secretAccessKey: env.FILES_S3_SECRET_ACCESS_KEY! },
  });
}
