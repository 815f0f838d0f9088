import { randomBytes } from 'node:crypto';

/**
 * Secrets a service started on a real database (DATABASE_URL) accepts: fresh per test process,
 * never the shipped defaults. Child-process tests of `src/main.ts` spread these into its env.
 */
export const SECURE_SECRETS = {
  JWT_SECRET: randomBytes(32).toString('hex'),
  MESSENGER_MEDIA_TOKEN_SECRET: randomBytes(32).toString('hex'),
  MESSENGER_TURN_SECRET: randomBytes(32).toString('hex'),
  // /metrics shares PORT in these services: a real database requires it to take a scrape secret.
  METRICS_SCRAPE_SECRET: randomBytes(32).toString('hex'),
} as const;

/** The header a scrape of such a service's /metrics presents. */
export const SCRAPE_HEADERS = { authorization: `Bearer ${SECURE_SECRETS.METRICS_SCRAPE_SECRET}` } as const;
