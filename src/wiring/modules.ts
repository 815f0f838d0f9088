import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { ConsumerDefinition } from '../platform/events/bus.ts';
import type { AdminCheck } from '../platform/http/auth-plugin.ts';
import type { Principal } from '../platform/http/auth.ts';
import type { HealthCheck } from '../platform/http/health-routes.ts';
import type { JobRunner } from '../platform/jobs/index.ts';
import type { ActorNames, BacklogMetric, FailureSource } from '../platform/ops/index.ts';
import { settingsPart, type ModuleDeps, type ModuleFactory } from '../platform/module.ts';
import type { HubAccess, HubDeps, HubMethod, ResolveGroupMembers } from '../platform/realtime/index.ts';

/**
 * What the modules hand the kernel (each module's `defineModule` parts), collected in one place:
 * the kernel parts are created first with these lists (the hub needs a group resolver before any
 * module exists, since modules need the hub to push), and wireModules fills them.
 */
export interface ModuleHooks {
  groupResolvers: ((p: Principal) => Promise<Iterable<string>>)[];
  memberResolvers: ResolveGroupMembers[];
  accessChecks: HubAccess[];
  hubMethods: Map<string, HubMethod>;
  /** Identity refuses an admin it knows as not Active. */
  adminChecks: AdminCheck[];
  consumers: ConsumerDefinition<unknown>[];
  healthChecks: HealthCheck[];
  opsFailures: FailureSource[];
  opsBacklogs: BacklogMetric[];
  opsActorNames: ActorNames[];
}

export const newModuleHooks = (): ModuleHooks => ({
  groupResolvers: [],
  memberResolvers: [],
  accessChecks: [],
  hubMethods: new Map(),
  adminChecks: [],
  consumers: [],
  healthChecks: [],
  opsFailures: [],
  opsBacklogs: [],
  opsActorNames: [],
});

/** The hub's view of the hooks: a user's groups from every module, a group's members from the module that owns it. */
export function hubHooksOf(hooks: ModuleHooks): Pick<HubDeps, 'resolveGroups' | 'resolveGroupMembers' | 'accessChecks' | 'methods'> {
  return {
    resolveGroups: async (p) => (await Promise.all(hooks.groupResolvers.map((r) => r(p)))).flatMap((g) => [...g]),
    resolveGroupMembers: async (group) => {
      for (const resolve of hooks.memberResolvers) {
        const members = await resolve(group);
        if (members) return members;
      }
      return undefined;
    },
    accessChecks: hooks.accessChecks,
    methods: hooks.hubMethods,
  };
}

/** Builds every module on the kernel: routes on the app, jobs on the runner, the rest into the hooks. */
export async function wireModules(
  app: FastifyInstance,
  factories: readonly ModuleFactory[],
  deps: ModuleDeps<Config>,
  runner: JobRunner,
  hooks: ModuleHooks,
): Promise<void> {
  // Every module is built before any registers its routes: a route may read what all modules
  // registered while they were built (the push kinds the realtime outbox's runbook filter lists).
  const built = factories.map((factory) => factory({ ...deps, settings: settingsPart(deps.settings, factory.settingNames) }));
  for (const parts of built) {
    if (parts.hubGroups) hooks.groupResolvers.push(parts.hubGroups);
    if (parts.hubGroupMembers) hooks.memberResolvers.push(parts.hubGroupMembers);
    if (parts.hubAccess) hooks.accessChecks.push(parts.hubAccess);
    for (const [name, method] of Object.entries(parts.hubMethods ?? {})) hooks.hubMethods.set(name, method);
    if (parts.adminCheck) hooks.adminChecks.push(parts.adminCheck);
    if (parts.routes) await app.register(async (scope) => parts.routes!(scope));
    for (const job of parts.jobs ?? []) runner.register(job);
    hooks.consumers.push(...(parts.consumers ?? []));
    hooks.healthChecks.push(...(parts.healthChecks ?? []));
    hooks.opsFailures.push(...(parts.opsFailures ?? []));
    hooks.opsBacklogs.push(...(parts.opsBacklogs ?? []));
    if (parts.opsActorNames) hooks.opsActorNames.push(parts.opsActorNames);
  }
}
