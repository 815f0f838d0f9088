import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { Db } from './db/index.ts';
import type { ConsumerDefinition, TopicReader } from './events/bus.ts';
import type { Principal } from './http/auth.ts';
import type { AdminCheck } from './http/auth-plugin.ts';
import type { HealthCheck } from './http/health-routes.ts';
import type { JobDefinition } from './jobs/types.ts';
import type { Logger } from './observability/logger.ts';
import type { ActorNames, BacklogMetric, FailureSource } from './ops/index.ts';
import type { Registry } from './observability/metrics.ts';
import type { Push } from './push/index.ts';
import type { Hub, HubAccess, HubMethod, ResolveGroupMembers } from './realtime/index.ts';
import type { Clock } from './time.ts';
import type { TProperties } from '@sinclair/typebox';
import type { SettingsOf } from './types/index.ts';

/** Durable frames to users (the push part's userFrames port), named here for the modules that take one. */
export type { UserFrame, UserFrames } from './push/index.ts';

/** What the platform hands each module at start; `settings` are the module's own, as plain values. */
export interface ModuleDeps<S = unknown> {
  settings: S;
  pool: pg.Pool;
  db: Db;
  log: Logger;
  clock: Clock;
  registry: Registry;
  hub: Hub;
  /**
   * The durable push path (platform/push): register the kinds this module owns; write frames of
   * its carried kinds to users in its own transactions (push.userFrames), each with a place in
   * their event stream.
   */
  push: Push;
  /**
   * Reads a product topic from its earliest retained offset in a throwaway group (runbook
   * replays); undefined on the in-process event bus, which keeps nothing to read again.
   */
  openTopicReader?: (topic: string, groupId: string) => Promise<TopicReader>;
}

/** A module's whole public surface towards the app: its routes, jobs, consumers and hub groups. */
export interface ModuleParts {
  name: string;
  routes?: (app: FastifyInstance) => void | Promise<void>;
  jobs?: JobDefinition[];
  // Each consumer declares its own payload type; the runner treats payloads as opaque.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  consumers?: ConsumerDefinition<any>[];
  /** Hub groups a new connection of this principal joins besides `user:{UserId}` (e.g. its chats). */
  hubGroups?: (principal: Principal) => Promise<Iterable<string>>;
  /** Members of the hub groups this module owns and versions (undefined for a group it does not own). */
  hubGroupMembers?: ResolveGroupMembers;
  /** Which connected users lost access to the hub (asked periodically; their sockets are closed). */
  hubAccess?: HubAccess;
  /** Hub methods clients may call, by name (e.g. the messenger's Typing). */
  hubMethods?: Record<string, HubMethod>;
  /** Asked on every admin route after the token: throws an AppError to refuse this admin. */
  adminCheck?: AdminCheck;
  /** Dependencies of the module that /health/ready reports (e.g. the messenger's search index). */
  healthChecks?: HealthCheck[];
  /** Failed rows the module owns that the ops console lists and acts on (retry, requeue, discard). */
  opsFailures?: FailureSource[];
  /** Backlog gauges of the module the ops console's overview shows. */
  opsBacklogs?: BacklogMetric[];
  /** Display names of the users the module knows among `ids` (UUIDs): the ops console's audit shows actors by name. */
  opsActorNames?: ActorNames;
}

/**
 * Builds a module. `settingNames` are the settings it reads (its settings.ts fields): the app hands
 * it those values only, so a module cannot come to depend on another part's settings unnoticed.
 */
// Each module declares its own settings type; the app treats them as opaque.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface ModuleFactory<S = any> {
  (deps: ModuleDeps<S>): ModuleParts;
  readonly settingNames: readonly string[];
}

/** A module over its settings' TypeBox fields (`settings.ts`): its factory gets `SettingsOf<typeof fields>`, and only those. */
export const defineModule = <P extends TProperties>(fields: P, factory: (deps: ModuleDeps<SettingsOf<P>>) => ModuleParts): ModuleFactory<SettingsOf<P>> =>
  Object.assign(factory, { settingNames: Object.keys(fields) });

/** The values of `names` in the loaded config: what the app hands one module. */
export function settingsPart(config: object, names: readonly string[]): Record<string, unknown> {
  const all = config as Record<string, unknown>;
  return Object.fromEntries(names.filter((n) => n in all).map((n) => [n, all[n]]));
}
