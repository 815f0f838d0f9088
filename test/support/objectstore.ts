import { createFileStore, type FileStore } from '../../src/modules/messenger/files/store.ts';

/**
 * The S3-compatible object store `npm test` starts (scripts/objectstore.sh, versitygw): its
 * FILES_S3_* settings as scripts/services.sh printed them, for an app under test, and a client of
 * the same store to look at what it holds. Its region and credentials are the AWS SDK's own
 * variables (AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), printed too and in this
 * process's environment, where the app's S3 client reads them (the SDK's default chain).
 */
const SETTINGS = ['FILES_S3_ENDPOINT', 'FILES_S3_BUCKET'] as const;
const SDK_VARIABLES = ['AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const;

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is unset: run the tests with \`npm test\` (it starts the object store)`);
  return value;
}

export function objectStoreEnv(): Record<string, string> {
  for (const name of SDK_VARIABLES) required(name);
  return Object.fromEntries(SETTINGS.map((name) => [name, required(name)]));
}

/** A client of the test store (the service's own adapter), to check which objects exist. */
export function objectStore(): FileStore {
  const env = objectStoreEnv();
  return createFileStore({ bucket: env.FILES_S3_BUCKET!, endpoint: env.FILES_S3_ENDPOINT, forcePathStyle: true });
}
