import { after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { pino, type DestinationStream } from 'pino';
import { loadConfig, type Config } from '../../src/config.ts';
import { buildApp } from '../../src/app.ts';
import { createLogger } from '../../src/platform/observability/logger.ts';
import { signToken } from '../../src/platform/http/auth.ts';
import { newId, type Clock } from '../../src/platform/time.ts';
import type { ModuleFactory } from '../../src/platform/module.ts';
import type { AppTuning } from '../../src/app.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { checkAnswersAgainstDocument } from './documented-answers.ts';

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  database: TestDatabase;
  token(opts?: { userId?: string; admin?: boolean }): Promise<string>;
}

/**
 * The whole app on its own database, closed when the test file ends. Settings default to no Kafka
 * (in-process bus) and no background work unless the test asks for them. A 4xx or 503 answer whose
 * code the API document does not list for its operation fails the request (documented-answers.ts).
 */
export async function buildTestApp(
  env: Record<string, string> = {},
  opts: { logDestination?: DestinationStream; logLevel?: string; modules?: ModuleFactory[]; clock?: Clock; tuning?: Partial<AppTuning> } = {},
): Promise<TestApp> {
  const database = await createTestDatabase({ dropAtEnd: false });
  // KAFKA_CLIENT runs every Kafka test on the client it names (e.g. KAFKA_CLIENT=platformatic npm test -- …).
  const client = process.env.KAFKA_CLIENT ? { KAFKA_CLIENT: process.env.KAFKA_CLIENT } : {};
  const config = loadConfig({ LOG_LEVEL: opts.logLevel ?? 'warn', JOBS_ENABLED: 'false', PORT: '0', ...client, ...env });
  // Logs go to stderr unless the test captures them: stdout is the test runner's report.
  const log = createLogger(config.LOG_LEVEL, opts.logDestination ?? pino.destination({ fd: 2, sync: true }));
  const app = await buildApp(config, { pool: database.pool, databaseUrl: database.url, log, modules: opts.modules, clock: opts.clock, tuning: opts.tuning });
  // Every refusal the test sees is one the API document lists for the operation and status.
  checkAnswersAgainstDocument(app);
  // The app (its job runner holds connections) closes before its database is dropped.
  after(async () => {
    await app.close();
    await database.drop();
  });
  return {
    app,
    config,
    database,
    token: ({ userId = newId(), admin = false } = {}) => signToken({ userId, admin }, config.JWT_SECRET, { issuer: config.AUTH_ISSUER, audience: config.AUTH_AUDIENCE }),
  };
}
