import { randomBytes } from 'node:crypto';

/**
 * Secrets a service started on a real database (DATABASE_URL) accepts: fresh per test process,
 * never the shipped defaults. Child-process tests of `src/main.ts` spread these into its env.
 */
export const SECURE_SECRETS = {
  JWT_SECRET: randomBytes(32).toString('hex'),
  MESSENGER_MEDIA_TOKEN_SECRET: randomBytes(32).toString('hex'),
  MESSENGER_TURN_SECRET: randomBytes(32).toString('hex'),
} as const;
