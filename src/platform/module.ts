import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { Config } from '../config.ts';
import type { Db } from './db/index.ts';
import type { JobDefinition } from './jobs/types.ts';
import type { Logger } from './observability/logger.ts';
import type { Registry } from './observability/metrics.ts';
import type { Clock } from './time.ts';

/** What the platform hands each module at start. */
export interface ModuleDeps {
  config: Config;
  pool: pg.Pool;
  db: Db;
  log: Logger;
  clock: Clock;
  registry: Registry;
}

/** A module's whole public surface towards the app: its routes, jobs and consumers. */
export interface ModuleParts<Consumer = unknown> {
  name: string;
  routes?: (app: FastifyInstance) => void | Promise<void>;
  jobs?: JobDefinition[];
  consumers?: Consumer[];
}

export type ModuleFactory<Consumer = unknown> = (deps: ModuleDeps) => ModuleParts<Consumer>;

export const defineModule = <Consumer>(factory: ModuleFactory<Consumer>): ModuleFactory<Consumer> => factory;
