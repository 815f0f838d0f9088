import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { Gauge, type Registry } from 'prom-client';
import { withTimeout } from '../time.ts';
import { sameSecret } from './auth-plugin.ts';
import { extractToken } from './auth.ts';
import { AppError } from './errors.ts';
import { HTTP_DEFAULTS } from './defaults.ts';

export type DependencyStatus = 'ok' | 'down' | 'disabled';

/** A dependency /health/ready reports; `required` ones being down make the replica unready (503). */
export interface HealthCheck {
  name: string;
  /** A function when it depends on why the dependency is down (e.g. the event bus: an outage no, refused credentials yes). */
  required: boolean | (() => boolean);
  check(): Promise<DependencyStatus>;
}

const isRequired = (c: HealthCheck): boolean => (typeof c.required === 'function' ? c.required() : c.required);

const Status = Type.Union([Type.Literal('ok'), Type.Literal('down'), Type.Literal('disabled')]);
const Ready = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unready')]),
  dependencies: Type.Record(Type.String(), Status),
});

/** Each check's status, and whether it is required, read after the check (which may have changed it). */
async function evaluate(checks: readonly HealthCheck[]): Promise<{ name: string; required: boolean; status: DependencyStatus }[]> {
  return Promise.all(
    checks.map(async (c) => {
      const status = await withTimeout(c.check(), HTTP_DEFAULTS.healthCheckTimeoutMs, `health check ${c.name}`).catch((): DependencyStatus => 'down');
      return { name: c.name, required: isRequired(c), status };
    }),
  );
}

type Evaluation = Awaited<ReturnType<typeof evaluate>>;

/** The checks run once for everyone: concurrent callers share the one in flight, later ones its result for HTTP_DEFAULTS.healthReadyMaxAgeMs. */
function sharedEvaluation(checks: readonly HealthCheck[]): () => Promise<Evaluation> {
  let last: { startedAt: number; results: Evaluation } | undefined;
  let inFlight: Promise<Evaluation> | undefined;
  return () => {
    if (last && performance.now() - last.startedAt <= HTTP_DEFAULTS.healthReadyMaxAgeMs) return Promise.resolve(last.results);
    if (!inFlight) {
      const startedAt = performance.now();
      inFlight = evaluate(checks)
        .then((results) => {
          last = { startedAt, results };
          return results;
        })
        .finally(() => (inFlight = undefined));
    }
    return inFlight;
  };
}

/**
 * The readiness checks as a metric, read at each scrape (the shared answer): 1 = ok, 0 = down; a disabled dependency
 * has no series. The "dependency down" alert reads it (required="true" is what makes /health/ready 503).
 */
function readinessGauge(registry: Registry, readiness: () => Promise<Evaluation>): void {
  new Gauge<'dependency' | 'required'>({
    name: 'health_dependency_up',
    help: 'Each /health/ready dependency at scrape time: 1 ok, 0 down (no series when disabled); required="true" ones make the replica unready',
    labelNames: ['dependency', 'required'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const { name, required, status } of await readiness()) {
        if (status !== 'disabled') this.set({ dependency: name, required: String(required) }, status === 'ok' ? 1 : 0);
      }
    },
  });
}

/**
 * /metrics names every topic, job and refusal count: with a scrape secret set, only a caller presenting
 * it reads them (wherever /metrics is served). /health/* stays open: load balancers and orchestrators
 * probe it without credentials, and it tells no more than up or down.
 */
function checkScrapeSecret(secret: string | undefined): ((req: FastifyRequest) => Promise<void>) | undefined {
  if (secret === undefined) return undefined;
  return async (req) => {
    const given = extractToken(req.headers);
    if (!given) throw new AppError('AUTH_REQUIRED', 'the metrics scrape secret is required as a bearer token', 401);
    if (!sameSecret(given, secret)) throw new AppError('AUTH_INVALID_CREDENTIAL', 'the metrics scrape secret does not match', 401);
  };
}

export function registerHealthRoutes(
  app: FastifyInstance,
  checks: HealthCheck[],
  registry: Registry,
  opts: { scrapeSecret?: string } = {},
): () => Promise<{ name: string; required: boolean; status: DependencyStatus }[]> {
  const readiness = sharedEvaluation(checks);
  readinessGauge(registry, readiness);
  app.get(
    '/health/live',
    { schema: { operationId: 'getLiveness', tags: ['ops'], summary: 'Liveness: the process is up', response: { 200: Type.Object({ status: Type.Literal('ok') }) } }, logLevel: 'warn' },
    async () => ({ status: 'ok' as const }),
  );

  app.get('/health/ready', { schema: { operationId: 'getReadiness', tags: ['ops'], summary: 'Readiness: each dependency ok / down / disabled; 503 while a required one is down', response: { 200: Ready, 503: Ready } }, logLevel: 'warn' }, async (_req, reply) => {
    const results = await readiness();
    const dependencies = Object.fromEntries(results.map((r) => [r.name, r.status]));
    const ready = results.every((r) => !r.required || r.status === 'ok');
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unready', dependencies });
  });

  const scrapeCheck = checkScrapeSecret(opts.scrapeSecret);
  app.get('/metrics', { schema: { operationId: 'getMetrics', tags: ['ops'], hide: true }, logLevel: 'warn', ...(scrapeCheck ? { onRequest: scrapeCheck } : {}) }, async (_req, reply) => {
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
  // The checks as /health/ready answers them (shared), for the ops console.
  return readiness;
}
