import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { identitySettings } from './modules/identity/settings.ts';
import { messengerSettings } from './modules/messenger/settings.ts';
import { messengerRealtimeSettings } from './modules/messenger/settings.ts';
import { notificationsSettings } from './modules/notifications/settings.ts';
import { userActivitySettings } from './modules/user-activity/settings.ts';

/**
 * Every setting of the service, read from the environment. `.env.example` lists the same names with
 * their defaults; keep both in step. Names are the environment variable names, so an error message
 * points straight at what to fix.
 */
export const Int = (opts: { default: number; minimum?: number; maximum?: number; description: string }) =>
  Type.Integer(opts);

export const Bool = (def: boolean, description: string) => Type.Boolean({ default: def, description });

/**
 * Modules add their settings as a properties record in `src/modules/<context>/settings.ts`
 * (names prefixed with the context, e.g. USER_ACTIVITY_…), spread into the schema below, so the
 * whole service still validates in one pass and reports every bad setting at once.
 */
const moduleSettings = {
  ...identitySettings,
  ...messengerSettings,
  ...messengerRealtimeSettings,
  ...notificationsSettings,
  ...userActivitySettings,
};

export const ConfigSchema = Type.Object({
  ...moduleSettings,
  HOST: Type.String({ default: '0.0.0.0', description: 'Address the HTTP server binds to' }),
  PORT: Int({ default: 3000, minimum: 0, maximum: 65535, description: 'HTTP port (0 = any free port)' }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info', description: 'pino log level' },
  ),

  DATABASE_URL: Type.Optional(
    Type.String({ pattern: '^postgres(ql)?://', description: 'PostgreSQL URL; unset = embedded PostgreSQL' }),
  ),
  EMBEDDED_PG_DATA_DIR: Type.String({
    default: '/tmp/pin-platform-jobs-pg',
    minLength: 1,
    description: 'Data directory of the embedded PostgreSQL (as root it must sit directly under /tmp)',
  }),
  EMBEDDED_PG_PORT: Int({ default: 54329, minimum: 1, maximum: 65535, description: 'Port of the embedded PostgreSQL' }),
  DB_POOL_MAX: Int({ default: 10, minimum: 2, maximum: 200, description: 'Connections in the pg pool' }),
  DATABASE_CONNECT_TIMEOUT_MS: Int({
    default: 5000,
    minimum: 100,
    description: 'Longest wait for one new PostgreSQL connection (a silent host fails instead of hanging)',
  }),
  DATABASE_STATEMENT_TIMEOUT_MS: Int({
    default: 30_000,
    minimum: 0,
    description: 'statement_timeout of pooled connections (0 = server default); migrations run without it',
  }),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: Int({
    default: 60_000,
    minimum: 0,
    description: 'A transaction idle this long is ended by the server, freeing its locks (0 = server default)',
  }),

  KAFKA_BROKERS: Type.Optional(
    Type.String({
      pattern: '^[^,\\s]+(,[^,\\s]+)*$',
      description: 'Comma-separated host:port list; unset = in-process event bus (no Kafka)',
    }),
  ),
  KAFKA_CLIENT_ID: Type.String({ default: 'pin-platform-jobs', minLength: 1, description: 'Kafka client id' }),
  KAFKA_TOPIC_PREFIX: Type.String({
    default: '',
    description: 'Test-only: prefix put before every topic and consumer group name',
  }),
  KAFKA_TOPIC_PARTITIONS: Int({ default: 6, minimum: 1, maximum: 1000, description: 'Partitions of created topics' }),

  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://', description: 'Redis URL for the hub backplane' })),
  REALTIME_BACKPLANE_ENABLED: Bool(false, 'Carry hub group sends between replicas through Redis (needs REDIS_URL)'),
  HUB_PING_INTERVAL_MS: Int({ default: 15_000, minimum: 100, description: 'SignalR ping (type 6) interval' }),
  HUB_CLIENT_TIMEOUT_MS: Int({
    default: 30_000,
    minimum: 200,
    description: 'A socket that sends nothing for this long is treated as dead and closed',
  }),
  HUB_MAX_BUFFERED_BYTES: Int({
    default: 1_048_576,
    minimum: 1024,
    description: 'Per-socket send buffer cap; past it the socket is closed as a slow consumer',
  }),

  JWT_SECRET: Type.String({
    default: 'dev-only-secret-change-me-in-production-0123456789',
    minLength: 32,
    description: 'HS256 secret for REST and hub tokens (at least 32 characters)',
  }),

  JOBS_ENABLED: Bool(true, 'Run background jobs and consumers in this process'),
  OUTBOX_POLL_INTERVAL_MS: Int({ default: 1000, minimum: 50, description: 'Outbox publisher timer (NOTIFY also wakes it)' }),
  OUTBOX_BATCH_SIZE: Int({ default: 1000, minimum: 1, maximum: 50_000, description: 'Outbox rows sent per batch' }),
  OUTBOX_MAX_RUN_MS: Int({ default: 5000, minimum: 100, description: 'Longest single outbox publisher run' }),
  OUTBOX_IDLE_WAIT_MS: Int({
    default: 250,
    minimum: 0,
    description: 'A publisher run with nothing left waits this long for the next commit before it ends (0 = end at once)',
  }),
  OUTBOX_RETENTION_HOURS: Int({ default: 24, minimum: 1, description: 'Published outbox rows are deleted after this' }),
  INBOX_RETENTION_DAYS: Int({ default: 7, minimum: 1, description: 'Consumer inbox (dedupe) rows are kept this long' }),

  SHUTDOWN_TIMEOUT_MS: Int({ default: 10_000, minimum: 1000, description: 'Hard limit for a graceful stop' }),
});

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.problems = problems;
  }
}

/** Values of these settings may carry credentials and are never echoed back. */
const SECRET_SETTINGS = /SECRET|PASSWORD|_URL$/;

/** Reads the settings; throws ConfigError naming every invalid one. Empty strings count as unset. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const known = Object.keys(ConfigSchema.properties);
  const raw: Record<string, unknown> = {};
  for (const key of known) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') raw[key] = value.trim();
  }
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw));
  const problems = [...Value.Errors(ConfigSchema, converted)].map((e) => {
    const name = e.path.slice(1) || '(root)';
    const shown = e.value === undefined || SECRET_SETTINGS.test(name) ? '' : ` (got ${JSON.stringify(e.value)})`;
    return `${name}: ${e.message}${shown}`;
  });
  if (raw.REALTIME_BACKPLANE_ENABLED !== undefined && (converted as Config).REALTIME_BACKPLANE_ENABLED && !raw.REDIS_URL) {
    problems.push('REALTIME_BACKPLANE_ENABLED: needs REDIS_URL');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return converted as Config;
}
