import type { FastifyInstance, RouteOptions } from 'fastify';

/** The hooks a route's token check may run at (a route that refuses unknown fields asks for the admin before validation). */
const GUARD_HOOKS = ['onRequest', 'preValidation', 'preHandler'] as const;

export type GuardHook = (typeof GUARD_HOOKS)[number];

/**
 * Where a route checks the bearer token (`requireUser`, `requireAdmin`, `requireOpsViewer` or `requireOpsOperator`), if it does: the hook and
 * its handlers as a list, with the guard's index — so the OpenAPI document and the modules that add
 * a check right after the token's find it whichever hook the route put it in.
 */
export function bearerGuardOf(app: FastifyInstance, route: RouteOptions): { hook: GuardHook; handlers: unknown[]; index: number } | undefined {
  for (const hook of GUARD_HOOKS) {
    const handlers = [route[hook] ?? []].flat() as unknown[];
    const guards: unknown[] = [app.requireUser, app.requireAdmin, app.requireOpsViewer, app.requireOpsOperator];
    const index = handlers.findIndex((h) => guards.includes(h));
    if (index >= 0) return { hook, handlers, index };
  }
  return undefined;
}

/** Runs `check` right after the route's token check (in the same hook); false when the route has none. */
export function addAfterBearerGuard(app: FastifyInstance, route: RouteOptions, check: unknown): boolean {
  const guard = bearerGuardOf(app, route);
  if (!guard) return false;
  guard.handlers.splice(guard.index + 1, 0, check);
  (route as unknown as Record<GuardHook, unknown[]>)[guard.hook] = guard.handlers;
  return true;
}
