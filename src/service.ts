/**
 * The service's life: load config, bring up the database (embedded PostgreSQL when DATABASE_URL is
 * unset), apply migrations, build the app, listen, start background work, stop gracefully on
 * SIGTERM/SIGINT. src/main.ts runs it with the fixed values; a test that runs the service as a child
 * process with shorter ones runs it through test/support/service-entry.ts, which hands them in code,
 * so no developer-only timing needs a setting of its own.
 */
import { ConfigError, listenHostOf, loadConfig, type Config } from './config.ts';
import { buildApp, type AppTuning } from './app.ts';
import { enforceStartupSafety } from './insecure-defaults.ts';
import { tunedModules, type ModuleTuning } from './modules/index.ts';
import { freeLocalPort, startEmbeddedPostgres, type EmbeddedPg } from './platform/db/embedded.ts';
import { createPool, DatabaseUnreachableError, migrateDatabase, waitForDatabase } from './platform/db/index.ts';
import { createLogger } from './platform/observability/logger.ts';
import { startTracing } from './platform/observability/tracing-sdk.ts';
import { KERNEL_TUNING, type KernelTuning } from './platform/tuning.ts';
import type { OpsTuning } from './platform/ops/index.ts';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';

/** The fixed values a test may shorten: the kernel's, the ops console's and each tuned module's. */
export interface ServiceTuning extends ModuleTuning {
  kernel?: Partial<AppTuning>;
  ops?: Partial<OpsTuning>;
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

export async function runService(overrides: ServiceTuning = {}): Promise<void> {
  const tuning: KernelTuning = { ...KERNEL_TUNING, ...overrides.kernel };
  const config = configOrExit();
  const log = createLogger(config.LOG_LEVEL);
  enforceStartupSafety(config, log);
  // First, so the instrumentations are in place before any connection opens (null: tracing off).
  const tracing = await startTracing(config, log);
  // A stray rejection in a background path is a bug to log loudly, not a reason to drop every
  // socket, run and consumer of this replica at 3 a.m.
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled promise rejection'));

  let embedded: EmbeddedPg | undefined;
  let pool: pg.Pool | undefined;
  let app: FastifyInstance | undefined;
  let stopping = false;
  /** Aborted by a signal: a start-up still waiting for the database stops waiting. */
  const startup = new AbortController();
  /** The start-up steps that cannot be interrupted (database, migrations, app, listen). */
  let prepared: Promise<void> = Promise.resolve();

  async function shutdown(signal: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    startup.abort(new Error(`${signal} during start-up`));
    log.info({ signal }, 'shutting down');
    const hardStop = setTimeout(() => {
      log.error('graceful shutdown timed out; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT);
    hardStop.unref();
    try {
      // A signal during start-up: the step in progress finishes and start-up goes no further; then
      // whatever is up is stopped as usual. Background work still starting is stopped by close().
      await prepared.catch(() => undefined);
      await app?.close(); // stops jobs between rows, consumers after their message, the hub, the bus
      await pool?.end();
      await embedded?.stop();
      await tracing?.shutdown(); // the last spans are exported before exit
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  }
  // Before anything slow starts (embedded PostgreSQL, Kafka at startBackground): a SIGTERM during
  // start-up must take the graceful path too, not kill the process with PostgreSQL still running.
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  async function prepare(): Promise<void> {
    if (!config.DATABASE_URL) {
      // Any free port: the service reaches it through embedded.url, and two local runs never collide.
      const port = await freeLocalPort();
      log.info({ dataDir: config.EMBEDDED_PG_DATA_DIR, port }, 'DATABASE_URL unset: starting embedded PostgreSQL');
      embedded = await startEmbeddedPostgres({
        dataDir: config.EMBEDDED_PG_DATA_DIR,
        port,
        database: 'pin',
        log,
      });
    }
    if (stopping) return;
    const databaseUrl = config.DATABASE_URL ?? embedded!.url;
    pool = createPool(databaseUrl, config.DATABASE_POOL_MAX, log, undefined, {
      DATABASE_STATEMENT_TIMEOUT: config.DATABASE_STATEMENT_TIMEOUT,
      DATABASE_CONNECT_TIMEOUT: tuning.databaseConnectTimeoutMs,
    });
    // A database that is not up yet (the whole stack starting at once) is waited for, not crashed on.
    await waitForDatabase(pool, { url: databaseUrl, waitMs: tuning.databaseStartupWaitMs, log, signal: startup.signal });
    if (stopping) return;
    await migrateDatabase(pool);
    if (stopping) return;
    app = await buildApp(config, { pool, databaseUrl, log, tuning: { ...overrides.kernel, ...overrides.ops }, modules: tunedModules(overrides) });
    if (stopping) return;
    await app.listen({ host: listenHostOf(config), port: config.PORT });
  }

  /**
   * Start-up failed (not stopping): one fatal line — for an unreachable database just the line naming
   * the host, no stack — then what is up is stopped and the process exits 1.
   */
  async function startupFailed(err: unknown): Promise<never> {
    stopping = true;
    if (err instanceof DatabaseUnreachableError) {
      log.fatal({ host: err.host, port: err.port, attempts: err.attempts }, err.message);
    } else {
      log.fatal({ err }, 'start-up failed');
    }
    await app?.close().catch(() => undefined);
    await pool?.end().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    await tracing?.shutdown().catch(() => undefined);
    process.exit(1);
  }

  prepared = prepare();
  // A failure while stopping is the shutdown's to report.
  await prepared.catch(async (err: unknown) => {
    if (!stopping) await startupFailed(err);
  });
  if (!stopping) {
    await app!.platform.startBackground().catch(async (err: unknown) => {
      if (!stopping) await startupFailed(err);
    });
  }
}
