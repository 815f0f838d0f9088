import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { identitySettings } from './modules/identity/settings.ts';
import { messengerRealtimeSettings, messengerSettings } from './modules/messenger/settings.ts';
import { filesSettingProblems, messengerFilesSettings } from './modules/messenger/files/settings.ts';
import { notificationsSettings } from './modules/notifications/settings.ts';
import { userActivitySettings } from './modules/user-activity/settings.ts';
import { databaseSettings } from './platform/db/settings.ts';
import { kafkaSecurityProblems } from './platform/events/kafka-security.ts';
import { eventBusSettings } from './platform/events/settings.ts';
import { authSettings, httpServerSettings, invalidCorsOrigins, invalidTrustProxyEntries, jwksProblems } from './platform/http/settings.ts';
import { outboxSettings } from './platform/outbox/settings.ts';
import { opsSettings } from './platform/ops/index.ts';
import { pushSettingProblems, pushSettings } from './platform/push/index.ts';
import { hubSettings } from './platform/realtime/settings.ts';
import { tracingSettings } from './platform/observability/settings.ts';
import { Bool, Duration, Int, isDuration, parseDuration, settingProblem } from './platform/types/index.ts';
import { retiredSettingProblems } from './retired-settings.ts';

/**
 * Every setting of the service, read from the environment. `.env.example` is generated from this
 * schema (`npm run env-example`; the test command fails while it is stale). Names are the environment
 * variable names, so an error message points straight at what to fix. A renamed or removed setting
 * goes into retired-settings.ts, so a deployment still setting it fails at start instead of silently
 * losing its value.
 */

/**
 * Each kernel part and each module defines its settings as a properties record (`settings.ts`
 * beside its code; module names prefixed with the context, e.g. USER_ACTIVITY_…), spread into the
 * schema below, so the whole service validates in one pass and reports every bad setting at once.
 * The parts receive their values as plain objects; none of them imports this file.
 */
const moduleSettings = {
  ...identitySettings,
  ...messengerSettings,
  ...messengerRealtimeSettings,
  ...messengerFilesSettings,
  ...notificationsSettings,
  ...userActivitySettings,
};

export const ConfigSchema = Type.Object({
  ...databaseSettings,
  ...eventBusSettings,
  ...hubSettings,
  ...authSettings,
  ...httpServerSettings,
  ...outboxSettings,
  ...opsSettings,
  ...pushSettings,
  ...tracingSettings,
  ...moduleSettings,
  HOST: Type.Optional(
    Type.String({
      minLength: 1,
      examples: ['0.0.0.0'],
      description:
        'Address the HTTP server (and METRICS_PORT) binds to; unset = 127.0.0.1 on the embedded PostgreSQL (DATABASE_URL unset: its shipped secrets are public, so it stays off the network), 0.0.0.0 on a real database',
    }),
  ),
  PORT: Int({ default: 3000, minimum: 0, maximum: 65535, description: 'HTTP port (0 = any free port)' }),
  METRICS_PORT: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      examples: [9464], description: 'Port of a separate listener for /metrics and /health/* (0 = any free port; keep it off the load balancer); unset = they are served on PORT, where /metrics then needs METRICS_SCRAPE_SECRET on a real database',
    }),
  ),
  API_DOCS_ENABLED: Bool(
    true,
    'Serve the OpenAPI document (/docs/json, /docs/yaml) and its browsable reference (/docs, Swagger UI) on PORT, without credentials; false = 404',
  ),
  ALLOW_INSECURE_DEFAULTS: Bool(
    false,
    'Start on a real database (DATABASE_URL) even with shipped/short secrets or the implicit in-process event bus (each is logged as a warning), and accept an identity provider (AUTH_JWKS_URL) over plain http or without AUTH_ISSUER/AUTH_AUDIENCE; for local use',
  ),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info', description: 'pino log level' },
  ),
  SHUTDOWN_TIMEOUT: Duration({ default: '10s', minimum: '1s', maximum: '10m', description: 'Hard limit for a graceful stop (SIGTERM): stop accepting, let jobs stop between rows, close sockets and the pool within it' }),
});

export type Config = Static<typeof ConfigSchema>;

/**
 * Where the server listens. `npm start` with nothing set runs on the embedded PostgreSQL with the
 * shipped JWT secret (public in .env.example) and /metrics open: bound to every interface, anyone on
 * the network could mint an admin token for it, so it binds loopback. A real database is a
 * deployment (a container, a host behind a load balancer): every interface, as before. HOST wins.
 */
export const listenHostOf = (c: Pick<Config, 'HOST' | 'DATABASE_URL'>): string => c.HOST ?? (c.DATABASE_URL ? '0.0.0.0' : '127.0.0.1');

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
  const fields: Record<string, TSchema> = ConfigSchema.properties;
  const raw: Record<string, unknown> = {};
  const problems = retiredSettingProblems(env);
  for (const [key, field] of Object.entries(fields)) {
    const value = env[key]?.trim();
    if (value === undefined || value === '') continue;
    // TypeBox's conversion truncates "1.5" and "1e3" to 1 for an integer: refused here instead.
    if (field.type === 'integer' && !isDuration(field) && !/^[+-]?\d+$/.test(value)) {
      problems.push(`${key}: not a whole number (got ${JSON.stringify(value)})`);
    } else if (!isDuration(field)) raw[key] = value;
    else if (parseDuration(value) !== undefined) raw[key] = parseDuration(value);
    else problems.push(`${key}: not a duration string such as 500ms, 30s, 5m, 24h or 7d (got ${JSON.stringify(value)})`);
  }
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw));
  for (const e of Value.Errors(ConfigSchema, converted)) {
    const name = e.path.slice(1) || '(root)';
    // A duration that did not parse is already named above (its default stands in meanwhile).
    if (problems.some((p) => p.startsWith(`${name}: not a duration`))) continue;
    problems.push(settingProblem(name, fields[name], e.message, e.value, SECRET_SETTINGS.test(name)));
  }
  if (raw.REALTIME_BACKPLANE_ENABLED !== undefined && (converted as Config).REALTIME_BACKPLANE_ENABLED && !raw.REDIS_URL) {
    problems.push('REALTIME_BACKPLANE_ENABLED: needs REDIS_URL');
  }
  const c = converted as Config;
  problems.push(...kafkaSecurityProblems(c));
  // The push options' one check repeats the fields' bounds (it also guards options built in code): run it on fields that passed them.
  if (!problems.some((p) => p.startsWith('MESSENGER_REALTIME_'))) problems.push(...pushSettingProblems(c));
  problems.push(...filesSettingProblems(c));
  if (c.METRICS_PORT !== undefined && c.METRICS_PORT !== 0 && c.METRICS_PORT === c.PORT) {
    problems.push('METRICS_PORT: must differ from PORT');
  }
  if (!c.ALLOW_INSECURE_DEFAULTS) problems.push(...jwksProblems(c).map((p) => `${p} (ALLOW_INSECURE_DEFAULTS=true allows it for local use)`));
  const badProxies = c.TRUST_PROXY === undefined ? [] : invalidTrustProxyEntries(c.TRUST_PROXY);
  if (badProxies.length > 0) problems.push(`TRUST_PROXY: not an address, CIDR range or keyword: ${badProxies.join(', ')}`);
  const badOrigins = c.CORS_ALLOWED_ORIGINS === undefined ? [] : invalidCorsOrigins(c.CORS_ALLOWED_ORIGINS);
  if (badOrigins.length > 0) problems.push(`CORS_ALLOWED_ORIGINS: not an exact origin such as https://app.example.com (scheme, host, port only; no path, slash or wildcard): ${badOrigins.join(', ')}`);
  if (problems.length > 0) throw new ConfigError(problems);
  return converted as Config;
}
