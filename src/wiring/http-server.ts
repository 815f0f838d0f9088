import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { listenHostOf, type Config } from '../config.ts';
import { registerAdminAudit, type AdminAuditSink } from '../platform/http/admin-audit.ts';
import { registerAuth, type AdminCheck } from '../platform/http/auth-plugin.ts';
import { registerCors } from '../platform/http/cors.ts';
import { clientErrors, frameworkErrors, registerErrorHandling } from '../platform/http/errors.ts';
import { registerJsonBodyParser } from '../platform/http/json-body.ts';
import { AJV_OPTIONS, registerStrictInputs, strictBodyValidators } from '../platform/http/strict-inputs.ts';
import { deriveOperationSecurity, SECURITY_SCHEMES, SERVERS } from '../platform/http/openapi.ts';
import { documentKernelResponses, nameComponents } from '../platform/http/openapi-components.ts';
import { registerRateLimits } from '../platform/http/rate-limit.ts';
import { corsOriginsOf, plainHttpOrigins, tokenRulesOf, trustProxyOf } from '../platform/http/settings.ts';
import { createTokenVerifier, type TokenVerifier } from '../platform/http/token-verifier.ts';
import { registerUserSlots } from '../platform/http/user-concurrency.ts';
import type { Logger } from '../platform/observability/logger.ts';
import type { Registry } from '../platform/observability/metrics.ts';
import { fastifyTracingPlugin } from '../platform/observability/tracing-sdk.ts';
import { HTTP_DEFAULTS, type HttpTuning } from '../platform/http/defaults.ts';

/**
 * The HTTP server every route is registered on, in the order its plugins need: tracing (it wraps
 * each route as it is added), the OpenAPI collector, the error format, strict inputs (unknown fields
 * refused) and the JSON body parser (forbidden keys refused), CORS (a preflight carries no
 * token and is answered before auth), auth with its per-user bound on requests in progress, the admin
 * audit (it finds the admin routes as they are added), then rate limits (the limiter attaches itself
 * to the routes registered after it). No route yet.
 */
export async function createHttpServer(
  config: Config,
  deps: { log: Logger; tuning: HttpTuning; adminChecks: AdminCheck[]; adminAudit: AdminAuditSink; registry: Registry },
): Promise<{ app: FastifyInstance; tokens: TokenVerifier }> {
  const { log, tuning } = deps;
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
      headersTimeout: Math.min(HTTP_DEFAULTS.httpHeadersTimeoutCapMs, tuning.httpRequestTimeoutMs),
      connectionsCheckingInterval: Math.min(HTTP_DEFAULTS.httpConnectionsCheckCapMs, Math.ceil(tuning.httpRequestTimeoutMs / 4)),
    },
    // Long-lived hub sockets must not hold up shutdown; in-flight requests still finish.
    forceCloseConnections: 'idle',
    // Unknown fields are refused, not silently removed (strict-inputs.ts).
    ajv: AJV_OPTIONS,
    // Bodies are validated without type coercion; path, query and headers keep it (strict-inputs.ts).
    schemaController: { compilersFactory: { buildValidator: strictBodyValidators() } },
    // The router's own refusals (a malformed path, a path parameter too long) in the one format.
    frameworkErrors,
    // What Node's HTTP parser refuses before routing (headers too large, a malformed request) too.
    clientErrorHandler: clientErrors,
  }) as unknown as FastifyInstance;
  const tracingPlugin = fastifyTracingPlugin();
  if (tracingPlugin) await app.register(tracingPlugin);
  await app.register(swagger, {
    openapi: { info: { title: 'PIN platform jobs', version: '0.1.0' }, servers: SERVERS, components: { securitySchemes: SECURITY_SCHEMES } },
    transformObject: nameComponents,
  });
  registerErrorHandling(app);
  registerStrictInputs(app);
  registerJsonBodyParser(app);
  await registerCors(app, corsOriginsOf(config));
  const plain = plainHttpOrigins(config);
  if (plain.length > 0) {
    // A page served over plain http from another machine can be altered on the way, and the token it holds read.
    log.warn({ origins: plain }, `CORS_ALLOWED_ORIGINS lists plain http:// origins that are not this machine (${plain.join(', ')}): a page served from them can be altered or read in transit, and with it the tokens it sends here; use https://`);
  }
  // One verifier for REST and the hub: one memory of verified tokens, one JWKS cache.
  const tokens = createTokenVerifier(tokenRulesOf(config));
  const maxPerUser = config.HTTP_MAX_CONCURRENT_REQUESTS_PER_USER;
  const userSlots = registerUserSlots(app, { maxPerUser, registry: deps.registry });
  registerAuth(app, tokens, { mediaCallbackSecret: config.MESSENGER_MEDIA_CALLBACK_SECRET, adminChecks: deps.adminChecks, userSlots });
  registerAdminAudit(app, deps.adminAudit);
  deriveOperationSecurity(app);
  documentKernelResponses(app, deps.adminChecks, { userSlots: maxPerUser > 0 });
  await registerRateLimits(app, { redisUrl: config.REDIS_URL, log });
  return { app, tokens };
}

/**
 * /metrics and /health/* on their own port (METRICS_PORT), so the load balancer need not expose them.
 * It listens when the main app gets ready (listen, or ready in tests): a taken port fails start-up.
 */
export function createOpsListener(app: FastifyInstance, config: Config, log: Logger): FastifyInstance {
  const ops = Fastify({ loggerInstance: log, frameworkErrors, clientErrorHandler: clientErrors }) as unknown as FastifyInstance;
  registerErrorHandling(ops);
  app.addHook('onReady', async () => {
    await ops.listen({ host: listenHostOf(config), port: config.METRICS_PORT! });
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
export async function registerApiDocs(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: DOCS_CSP,
    // A token pasted into "Authorize" stays in the page, never in localStorage.
    uiConfig: { persistAuthorization: false, displayOperationId: true },
    // The page and its assets are fetched a dozen requests at a time; not worth an info line each.
    logLevel: 'warn',
  });
}
