import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { Config } from './config.ts';
import { createDb, createPool, pingDatabase, type Db } from './platform/db/index.ts';
import { createJobRunner, type JobRunner } from './platform/jobs/index.ts';
import type { Logger } from './platform/observability/logger.ts';
import { createRegistry, type Registry } from './platform/observability/metrics.ts';
import { registerHealthRoutes, type HealthCheck } from './platform/http/health-routes.ts';
import { adminAuditSink, createOpsConsole, type OpsTuning } from './platform/ops/index.ts';
import { createPush, pushJobs, realtimeFailureSource, registerEventStreamRoutes } from './platform/push/index.ts';
import { createHubFromConfig, hubPlugin, type Hub } from './platform/realtime/index.ts';
import { systemClock, type Clock } from './platform/time.ts';
import { KERNEL_TUNING, type KernelTuning } from './platform/tuning.ts';
import type { ModuleDeps, ModuleFactory } from './platform/module.ts';
import type { EventBus } from './platform/events/bus.ts';
import { createEventBus } from './platform/events/create-bus.ts';
import { resolveConsumer } from './platform/events/consumer-definition.ts';
import { deadLetterSource } from './platform/events/dead-letter-source.ts';
import { dlqTopicOf, withPrefix } from './platform/events/topics.ts';
import type { ConsumerDefinition } from './platform/events/bus.ts';
import type { FailureSource } from './platform/ops/index.ts';
import { outboxPublisherJob } from './platform/outbox/publisher.ts';
import { outboxCleanupJob } from './platform/outbox/cleanup.ts';
import { EVENT_TOPICS } from './event-topics.ts';
import { modules as allModules } from './modules/index.ts';
import { createBackground } from './wiring/background.ts';
import { createHttpServer, createOpsListener, registerApiDocs } from './wiring/http-server.ts';
import { hubHooksOf, newModuleHooks, wireModules } from './wiring/modules.ts';

/** The fixed values buildApp runs with: each kernel part's (its defaults.ts, gathered in platform/tuning.ts). */
export type AppTuning = KernelTuning;

export interface AppDeps {
  pool: pg.Pool;
  /** For the job runner's dedicated lock and LISTEN connections. */
  databaseUrl: string;
  log: Logger;
  clock?: Clock;
  modules?: ModuleFactory[];
  /** The kernel parts' fixed values (each part's defaults.ts); a test shortens one here. */
  tuning?: Partial<AppTuning>;
}

/** The platform parts the entry point and tests reach for. */
export interface Platform {
  registry: Registry;
  runner: JobRunner;
  hub: Hub;
  bus: EventBus;
  /** The separate listener of /metrics and /health/* when METRICS_PORT is set. */
  ops?: FastifyInstance;
  /** Starts jobs and consumers (after listen, so a replica serves health while it warms up). */
  startBackground(): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    platform: Platform;
  }
}


/**
 * Builds the whole service on an existing pool: HTTP (auth, errors, OpenAPI, health, metrics, ops),
 * the realtime hub, the event bus, the job runner, and every module's routes, jobs and consumers.
 * Nothing runs in the background until `app.platform.startBackground()`.
 */
export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const { pool, log } = deps;
  const clock = deps.clock ?? systemClock;
  const tuning: AppTuning = { ...KERNEL_TUNING, ...deps.tuning };
  const registry = createRegistry(log);
  const db = createDb(pool);
  const hooks = newModuleHooks();
  const { app, tokens } = await createHttpServer(config, { log, tuning, adminChecks: hooks.adminChecks, adminAudit: adminAuditSink(db, clock), registry });

  // Created before the modules, which need it to push; they fill its group resolvers below.
  const hub = await createHubFromConfig(config, { registry, logger: log, clock, tokens, ...hubHooksOf(hooks) }, tuning);
  await app.register(hubPlugin, { hub, accessChecks: hooks.accessChecks });

  const bus = createEventBus(config, { log, catalogue: EVENT_TOPICS, tuning });
  if (bus.kind === 'in-process') {
    log.warn('KAFKA_BROKERS is unset: integration events stay in this process (in-process event bus); nothing reaches Kafka');
  }

  // The outbox publisher and the consumers get small pools of their own: measured under load, a
  // burst of request transactions on the shared pool otherwise queues the publisher's reads and marks.
  const timeouts = { DATABASE_STATEMENT_TIMEOUT: config.DATABASE_STATEMENT_TIMEOUT, DATABASE_CONNECT_TIMEOUT: tuning.databaseConnectTimeoutMs };
  const publisherPool = createPool(deps.databaseUrl, tuning.outboxPublisherPoolSize, log, 'pin-outbox-publisher', timeouts);
  const consumerPool = createPool(deps.databaseUrl, tuning.consumerPoolSize, log, 'pin-consumers', timeouts);
  const runner = createJobRunner({ db, databaseUrl: deps.databaseUrl, log, registry, clock });
  runner.register(
    outboxPublisherJob({
      db: createDb(publisherPool),
      bus,
      log,
      registry,
      batchSize: tuning.outboxBatchSize,
      maxRunMs: tuning.outboxMaxRunMs,
      idleWaitMs: tuning.outboxIdleWaitMs,
      pollIntervalMs: config.OUTBOX_POLLING_INTERVAL,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
    }),
  );
  runner.register(outboxCleanupJob({ db }));

  // The kernel's push part: every module registers its kinds there and writes its frames through it.
  const push = createPush();
  const openTopicReader = bus.openTopicReader?.bind(bus);
  const moduleDeps: ModuleDeps<Config> = {
    settings: config,
    pool,
    db,
    log,
    clock,
    registry,
    hub,
    push,
    ...(openTopicReader ? { openTopicReader: (topic: string, groupId: string) => openTopicReader(withPrefix(config.KAFKA_TOPIC_PREFIX, topic), withPrefix(config.KAFKA_TOPIC_PREFIX, groupId)) } : {}),
  };
  await wireModules(app, deps.modules ?? allModules, moduleDeps, runner, hooks);
  // Its dispatcher, retention and event stream, once the modules have registered what it carries.
  if (push.hasKinds()) {
    for (const job of pushJobs({ db, hub, registry, clock, push, settings: config, tuning })) runner.register(job);
    registerEventStreamRoutes(app, { db, kinds: push.kinds });
  }

  const checks: HealthCheck[] = [
    { name: 'database', required: true, check: async () => ((await pingDatabase(db)) ? 'ok' : 'down') },
    // An outage leaves the replica ready (the outbox holds the events); refused credentials are this
    // replica's misconfiguration (e.g. a rollout with a wrong KAFKA_SASL_PASSWORD): unready until fixed.
    { name: 'eventBus', required: () => bus.credentialsRefused() !== undefined, check: () => bus.health() },
    { name: 'backplane', required: config.REALTIME_BACKPLANE_ENABLED, check: () => hub.health() },
    ...hooks.healthChecks,
  ];
  const ops = config.METRICS_PORT === undefined ? undefined : createOpsListener(app, config, log);
  const readiness = registerHealthRoutes(ops ?? app, checks, registry, { scrapeSecret: config.METRICS_SCRAPE_SECRET });
  const opsConsole = createOpsConsole({
    db,
    log,
    clock,
    registry,
    runner,
    readiness,
    hubConnections: () => hub.connectionCount(),
    holder: runner.holder,
    tuning,
    ...(config.OPS_TRACE_URL ? { traceUrl: config.OPS_TRACE_URL } : {}),
  });
  if (push.hasKinds()) opsConsole.registerFailures(realtimeFailureSource(db, clock));
  for (const source of hooks.opsFailures) opsConsole.registerFailures(source);
  const deadLetters = deadLetterKind({ config, bus, consumers: hooks.consumers, tuning, log, db, clock });
  if (deadLetters) opsConsole.registerFailures(deadLetters);
  opsConsole.registerBacklogs(hooks.opsBacklogs);
  for (const names of hooks.opsActorNames) opsConsole.registerActorNames(names);
  opsConsole.register(app);
  if (config.API_DOCS_ENABLED) await registerApiDocs(app);

  const background = createBackground({ config, bus, runner, consumers: hooks.consumers, consumerPool, log, registry });
  app.decorate('platform', {
    registry,
    runner,
    hub,
    bus,
    ops,
    startBackground: async () => {
      await background.start();
      opsConsole.start();
    },
  });

  // Shutdown order: Fastify stops accepting and closes the hub (its preClose); then jobs stop between
  // rows, consumers after their current message, and the producer last.
  app.addHook('onClose', async () => {
    opsConsole.stop();
    await background.stop();
    await Promise.all([publisherPool.end(), consumerPool.end()]);
    // Last, so /health/* keeps answering while the replica drains.
    await ops?.close();
  });

  return app;
}

/** The dead letters of every consumed topic as a failure kind (replayable); none on the in-process bus (nothing kept to read). */
function deadLetterKind(deps: {
  config: Config;
  bus: EventBus;
  consumers: readonly ConsumerDefinition<unknown>[];
  tuning: OpsTuning;
  log: Logger;
  db: Db;
  clock: Clock;
}): FailureSource | undefined {
  const { config, bus, consumers, tuning, log } = deps;
  const open = bus.openTopicReader?.bind(bus);
  if (!open) return undefined;
  return deadLetterSource({
    db: deps.db,
    clock: deps.clock,
    // Only their names, topics and idempotency keys are read: no runtime defaults needed.
    consumers: consumers.map((c) => resolveConsumer(c, config.KAFKA_TOPIC_PREFIX)),
    publish: (messages) => bus.publish(messages),
    topics: () => [...new Set(consumers.map((c) => dlqTopicOf(withPrefix(config.KAFKA_TOPIC_PREFIX, c.topic))))],
    openReader: open,
    groupPrefix: withPrefix(config.KAFKA_TOPIC_PREFIX, config.KAFKA_CLIENT_ID),
    keepPerTopic: tuning.opsDlqKeepPerTopic,
    freshMs: tuning.opsDlqFreshMs,
    log,
  });
}
