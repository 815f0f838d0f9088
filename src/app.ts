import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type pg from 'pg';
import type { Config } from './config.ts';
import { createDb, createPool, pingDatabase } from './platform/db/index.ts';
import { createJobRunner, type JobRunner } from './platform/jobs/index.ts';
import type { Logger } from './platform/observability/logger.ts';
import { createRegistry, type Registry } from './platform/observability/metrics.ts';
import { fastifyTracingPlugin } from './platform/observability/tracing-sdk.ts';
import { registerAuth, type AdminCheck } from './platform/http/auth-plugin.ts';
import { registerRateLimits } from './platform/http/rate-limit.ts';
import { tokenRulesOf, trustProxyOf } from './platform/http/settings.ts';
import { createTokenVerifier } from './platform/http/token-verifier.ts';
import { registerErrorHandling } from './platform/http/errors.ts';
import { AJV_OPTIONS, registerStrictInputs } from './platform/http/strict-inputs.ts';
import { registerJsonBodyParser } from './platform/http/json-body.ts';
import { registerHealthRoutes, type HealthCheck } from './platform/http/health-routes.ts';
import { registerOpsRoutes } from './platform/http/ops-routes.ts';
import { deriveOperationSecurity, SECURITY_SCHEMES, SERVERS } from './platform/http/openapi.ts';
import { createHubFromConfig, hubPlugin, type Hub, type HubAccess, type HubMethod, type ResolveGroupMembers } from './platform/realtime/index.ts';
import type { Principal } from './platform/http/auth.ts';
import { systemClock, type Clock } from './platform/time.ts';
import { KERNEL_TUNING, type KernelTuning } from './platform/tuning.ts';
import type { ModuleDeps, ModuleFactory } from './platform/module.ts';
import type { ConsumerDefinition, ConsumerHandle, EventBus } from './platform/events/bus.ts';
import { createEventBus } from './platform/events/create-bus.ts';
import { withPrefix } from './platform/events/topics.ts';
import { outboxPublisherJob } from './platform/outbox/publisher.ts';
import { CLEANUP_RETENTION, outboxCleanupJob } from './platform/outbox/cleanup.ts';
import { EVENT_TOPICS } from './event-topics.ts';
import { backoffDelayMs, type Backoff } from './platform/backoff/index.ts';
import { modules as allModules } from './modules/index.ts';
import { enqueueUserFrames } from './modules/messenger/index.ts';

/**
 * A publisher run with nothing left waits this long for the next commit's wake before it ends, so a
 * steady stream of events is served by one run per max run; short enough that an idle replica holds
 * nothing (a fixed value, no longer the setting OUTBOX_IDLE_WAIT_MS: nobody tuned it).
 */
const OUTBOX_IDLE_WAIT_MS = 250;

/** Kafka down at start: try again after 2 s, doubling to 30 s. */
const BUS_START_BACKOFF: Backoff = { baseMs: 2000, factor: 2, capMs: 30_000, jitter: 0 };

export interface AppDeps {
  pool: pg.Pool;
  /** For the job runner's dedicated lock and LISTEN connections. */
  databaseUrl: string;
  log: Logger;
  clock?: Clock;
  modules?: ModuleFactory[];
  /** The kernel's fixed values (KERNEL_TUNING); a test shortens one here. */
  tuning?: Partial<KernelTuning>;
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
 * /metrics and /health/* on their own port (METRICS_PORT), so the load balancer need not expose them.
 * It listens when the main app gets ready (listen, or ready in tests): a taken port fails start-up.
 */
function createOpsListener(app: FastifyInstance, config: Config, log: Logger): FastifyInstance {
  const ops = Fastify({ loggerInstance: log }) as unknown as FastifyInstance;
  registerErrorHandling(ops);
  app.addHook('onReady', async () => {
    await ops.listen({ host: config.HOST, port: config.METRICS_PORT! });
  });
  return ops;
}

/**
 * The page may load only its own bundled assets (no CDN, no spec validator) and talk only to this
 * origin ("Try it out"); not framable. No upgrade-insecure-requests: replicas are reached over plain
 * HTTP inside the cluster, and the upgrade would break the assets there.
 */
const DOCS_CSP =
  "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'; img-src 'self' data:; " +
  "object-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self' 'unsafe-inline'";

/** /docs: Swagger UI over the OpenAPI document, which it also serves at /docs/json and /docs/yaml. */
async function registerApiDocs(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: DOCS_CSP,
    // A token pasted into "Authorize" stays in the page, never in localStorage.
    uiConfig: { persistAuthorization: false, displayOperationId: true },
    // The page and its assets are fetched a dozen requests at a time; not worth an info line each.
    logLevel: 'warn',
  });
}

/**
 * Builds the whole service on an existing pool: HTTP (auth, errors, OpenAPI, health, metrics, ops),
 * the realtime hub, the event bus, the job runner, and every module's routes, jobs and consumers.
 * Nothing runs in the background until `app.platform.startBackground()`.
 */
export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const { pool, log } = deps;
  const clock = deps.clock ?? systemClock;
  const tuning: KernelTuning = { ...KERNEL_TUNING, ...deps.tuning };
  const registry = createRegistry(log);
  const db = createDb(pool);

  const app = Fastify({
    loggerInstance: log,
    // Only the load balancers named in TRUST_PROXY may set the client address (X-Forwarded-For);
    // trusting everyone would let any client pick the address its rate limit is counted under.
    trustProxy: trustProxyOf(config),
    requestTimeout: tuning.httpRequestTimeoutMs,
    connectionTimeout: tuning.httpConnectionTimeoutMs,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT,
    http: {
      // Node requires headersTimeout <= requestTimeout, and checks both only every
      // connectionsCheckingInterval (30 s by default, too coarse for short timeouts).
      headersTimeout: Math.min(60_000, tuning.httpRequestTimeoutMs),
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(tuning.httpRequestTimeoutMs / 4)),
    },
    // Long-lived hub sockets must not hold up shutdown; in-flight requests still finish.
    forceCloseConnections: 'idle',
    // Unknown fields are refused, not silently removed (strict-inputs.ts).
    ajv: AJV_OPTIONS,
  }) as unknown as FastifyInstance;
  // Before any route: @fastify/otel wraps each route as it is added (absent when tracing is off).
  const tracingPlugin = fastifyTracingPlugin();
  if (tracingPlugin) await app.register(tracingPlugin);

  await app.register(swagger, {
    openapi: {
      info: { title: 'PIN platform jobs', version: '0.1.0' },
      servers: SERVERS,
      components: { securitySchemes: SECURITY_SCHEMES },
    },
  });
  registerErrorHandling(app);
  registerStrictInputs(app);
  registerJsonBodyParser(app);
  // One verifier for REST and the hub: one memory of verified tokens, one JWKS cache.
  const tokens = createTokenVerifier(tokenRulesOf(config));
  // Filled by the modules below (identity refuses an admin it knows as not Active).
  const adminChecks: AdminCheck[] = [];
  registerAuth(app, tokens, { mediaCallbackSecret: config.MESSENGER_MEDIA_CALLBACK_SECRET, adminChecks });
  deriveOperationSecurity(app);
  // Before any route: the limiter attaches itself to the routes registered after it.
  await registerRateLimits(app, { redisUrl: config.REDIS_URL, log });

  // Modules that own hub groups (the messenger's chat:{ChatId}) register resolvers below; the hub is
  // created first because those modules need it to push.
  const groupResolvers: ((p: Principal) => Promise<Iterable<string>>)[] = [];
  const memberResolvers: ResolveGroupMembers[] = [];
  const accessChecks: HubAccess[] = [];
  const hubMethods = new Map<string, HubMethod>();
  const hub = await createHubFromConfig(config, {
    registry,
    logger: log,
    clock,
    tokens,
    resolveGroups: async (p) => (await Promise.all(groupResolvers.map((r) => r(p)))).flatMap((g) => [...g]),
    resolveGroupMembers: async (group) => {
      for (const resolve of memberResolvers) {
        const members = await resolve(group);
        if (members) return members;
      }
      return undefined;
    },
    accessChecks,
    methods: hubMethods,
  }, tuning);
  await app.register(hubPlugin, { hub });

  const bus = createEventBus(config, { log, catalogue: EVENT_TOPICS, tuning });
  if (bus.kind === 'in-process') {
    log.warn('KAFKA_BROKERS is unset: integration events stay in this process (in-process event bus); nothing reaches Kafka');
  }

  // The outbox publisher and the consumers get small pools of their own: measured under load, a
  // burst of request transactions on the shared pool otherwise queues the publisher's reads and marks.
  const timeouts = { DATABASE_STATEMENT_TIMEOUT: config.DATABASE_STATEMENT_TIMEOUT, DATABASE_CONNECT_TIMEOUT: tuning.databaseConnectTimeoutMs };
  const publisherPool = createPool(deps.databaseUrl, 3, log, 'pin-outbox-publisher', timeouts);
  const consumerPool = createPool(deps.databaseUrl, 6, log, 'pin-consumers', timeouts);
  const runner = createJobRunner({ db, databaseUrl: deps.databaseUrl, log, registry, clock });
  runner.register(
    outboxPublisherJob({
      db: createDb(publisherPool),
      bus,
      log,
      registry,
      batchSize: config.OUTBOX_BATCH_SIZE,
      maxRunMs: config.OUTBOX_MAX_RUN_DURATION,
      idleWaitMs: OUTBOX_IDLE_WAIT_MS,
      pollIntervalMs: config.OUTBOX_POLLING_INTERVAL,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
    }),
  );
  runner.register(
    outboxCleanupJob({
      db,
      settings: CLEANUP_RETENTION,
    }),
  );
  const consumers: ConsumerDefinition<unknown>[] = [];
  const moduleChecks: HealthCheck[] = [];

  const openTopicReader = bus.openTopicReader?.bind(bus);
  const moduleDeps: ModuleDeps<Config> = {
    settings: config,
    pool,
    db,
    log,
    clock,
    registry,
    hub,
    // The messenger's realtime outbox carries other modules' user frames (one dispatcher, one stream).
    userFrames: enqueueUserFrames,
    ...(openTopicReader ? { openTopicReader: (topic: string, groupId: string) => openTopicReader(withPrefix(config.KAFKA_TOPIC_PREFIX, topic), withPrefix(config.KAFKA_TOPIC_PREFIX, groupId)) } : {}),
  };
  for (const factory of deps.modules ?? allModules) {
    const parts = factory(moduleDeps);
    if (parts.hubGroups) groupResolvers.push(parts.hubGroups);
    if (parts.hubGroupMembers) memberResolvers.push(parts.hubGroupMembers);
    if (parts.hubAccess) accessChecks.push(parts.hubAccess);
    for (const [name, method] of Object.entries(parts.hubMethods ?? {})) hubMethods.set(name, method);
    if (parts.adminCheck) adminChecks.push(parts.adminCheck);
    if (parts.routes) await app.register(async (scope) => parts.routes!(scope));
    for (const job of parts.jobs ?? []) runner.register(job);
    consumers.push(...(parts.consumers ?? []));
    moduleChecks.push(...(parts.healthChecks ?? []));
  }

  const checks: HealthCheck[] = [
    { name: 'database', required: true, check: async () => ((await pingDatabase(db)) ? 'ok' : 'down') },
    // An outage leaves the replica ready (the outbox holds the events); refused credentials are this
    // replica's misconfiguration (e.g. a rollout with a wrong KAFKA_SASL_PASSWORD): unready until fixed.
    { name: 'eventBus', required: () => bus.credentialsRefused() !== undefined, check: () => bus.health() },
    { name: 'backplane', required: config.REALTIME_BACKPLANE_ENABLED, check: () => hub.health() },
    ...moduleChecks,
  ];
  const ops = config.METRICS_PORT === undefined ? undefined : createOpsListener(app, config, log);
  registerHealthRoutes(ops ?? app, checks, registry);
  registerOpsRoutes(app, runner);
  if (config.API_DOCS_ENABLED) await registerApiDocs(app);

  const handles: ConsumerHandle[] = [];
  let background: 'idle' | 'started' | 'closing' = 'idle';
  let busRetry: NodeJS.Timeout | undefined;
  // A function, not a narrowed comparison: onClose changes `background` while a join is awaited.
  const closing = () => background === 'closing';

  /**
   * Topics and the producer, then consumers. Kafka being down at start must not stop the replica:
   * retry until it is back. Jobs need only the producer, so the consumers join their groups in the
   * background: after a crash a join waits until the dead member's session expires (up to the
   * session timeout), and the outbox publisher and realtime dispatch must not wait with it.
   */
  async function connectBus(attempt = 1): Promise<void> {
    if (background === 'closing') return;
    try {
      await bus.start();
    } catch (err) {
      retryBus(attempt, err);
      return;
    }
    void subscribeConsumers(attempt);
  }

  async function subscribeConsumers(attempt: number): Promise<void> {
    try {
      // A retry after a partial start subscribes only the consumers still missing.
      while (handles.length < consumers.length && !closing()) {
        const consumer = consumers[handles.length]!;
        const handle = await bus.subscribe(consumer, { db: createDb(consumerPool), log, registry, topicPrefix: config.KAFKA_TOPIC_PREFIX });
        handles.push(handle);
        // Closed while this one was joining: onClose has stopped the others already.
        if (closing()) await handle.stop();
      }
    } catch (err) {
      retryBus(attempt, err);
    }
  }

  function retryBus(attempt: number, err: unknown): void {
    if (background === 'closing') return;
    const delayMs = backoffDelayMs(BUS_START_BACKOFF, attempt);
    log.error({ err, attempt, retryInMs: delayMs }, 'event bus start failed; outbox rows wait, consumers start when it is back');
    busRetry = setTimeout(() => void connectBus(attempt + 1), delayMs);
  }

  app.decorate('platform', {
    registry,
    runner,
    hub,
    bus,
    ops,
    async startBackground() {
      if (!config.JOBS_ENABLED || background !== 'idle') return;
      background = 'started';
      await connectBus();
      await runner.start();
    },
  });

  // Shutdown order: Fastify stops accepting and closes the hub (its preClose); then jobs stop between
  // rows, consumers after their current message, and the producer last.
  app.addHook('onClose', async () => {
    background = 'closing';
    clearTimeout(busRetry);
    await runner.stop();
    await Promise.all(handles.map((h) => h.stop()));
    await bus.stop();
    await Promise.all([publisherPool.end(), consumerPool.end()]);
    // Last, so /health/* keeps answering while the replica drains.
    await ops?.close();
  });

  return app;
}
