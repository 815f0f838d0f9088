import { Type } from '@sinclair/typebox';
import { Duration, Int, type SettingsOf } from '../types/index.ts';
import { DB_DEFAULTS } from './defaults.ts';

/** The database: PostgreSQL URL or the embedded server, pool size and statement timeout. One TypeBox field per setting is its one source of default, bounds and unit (config.ts reads them from the environment). */
export const databaseSettings = {
  DATABASE_URL: Type.Optional(
    Type.String({ pattern: '^postgres(ql)?://', examples: ['postgres://user:password@host:5432/pin'], description: 'PostgreSQL URL; unset = embedded PostgreSQL' }),
  ),
  EMBEDDED_PG_DATA_DIR: Type.String({
    default: '/tmp/pin-platform-jobs-pg',
    minLength: 1,
    description: 'Data directory of the embedded PostgreSQL (as root it must sit directly under /tmp)',
  }),
  DATABASE_POOL_MAX: Int({ default: DB_DEFAULTS.databasePoolMax, minimum: 2, maximum: 200, description: 'Connections in the pg pool' }),
  DATABASE_STATEMENT_TIMEOUT: Duration({
    default: DB_DEFAULTS.databaseStatementTimeoutMs,
    minimum: '0s',
    description: 'statement_timeout of pooled connections (0 = server default); migrations run without it',
  }),
};

export type DatabaseSettings = SettingsOf<typeof databaseSettings>;
