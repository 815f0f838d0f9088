import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Registry } from 'prom-client';

export type DependencyStatus = 'ok' | 'down' | 'disabled';

/** A dependency /health/ready reports; `required` ones being down make the replica unready (503). */
export interface HealthCheck {
  name: string;
  required: boolean;
  check(): Promise<DependencyStatus>;
}

const Status = Type.Union([Type.Literal('ok'), Type.Literal('down'), Type.Literal('disabled')]);
const Ready = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unready')]),
  dependencies: Type.Record(Type.String(), Status),
});

export function registerHealthRoutes(app: FastifyInstance, checks: HealthCheck[], registry: Registry): void {
  app.get(
    '/health/live',
    { schema: { tags: ['ops'], response: { 200: Type.Object({ status: Type.Literal('ok') }) } }, logLevel: 'warn' },
    async () => ({ status: 'ok' as const }),
  );

  app.get('/health/ready', { schema: { tags: ['ops'], response: { 200: Ready, 503: Ready } }, logLevel: 'warn' }, async (_req, reply) => {
    const results = await Promise.all(
      checks.map(async (c) => [c, await c.check().catch((): DependencyStatus => 'down')] as const),
    );
    const dependencies = Object.fromEntries(results.map(([c, s]) => [c.name, s]));
    const ready = results.every(([c, s]) => !c.required || s === 'ok');
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unready', dependencies });
  });

  app.get('/metrics', { schema: { tags: ['ops'], hide: true }, logLevel: 'warn' }, async (_req, reply) => {
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
}
