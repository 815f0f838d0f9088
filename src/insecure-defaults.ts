/**
 * Local use vs production (docs/architecture.md, "Decisions"): the shipped secrets are public (they are the TypeBox
 * defaults and the values in .env.example), and the in-process event bus keeps integration events
 * inside one replica; plain SMTP (NOTIFICATIONS_SMTP_TLS=none) sends credentials and mail in clear;
 * /metrics on the API port without a scrape secret tells anyone the service's internals.
 * All are fine on a laptop's embedded PostgreSQL; pointed at a real database
 * (DATABASE_URL set) the service refuses them at start, unless ALLOW_INSECURE_DEFAULTS=true says the
 * operator knows — then each is logged as a warning.
 */
import { ConfigSchema, type Config } from './config.ts';
import { jwksProblems } from './platform/http/settings.ts';

/** Secrets that ship with a public default value. */
export const GUARDED_SECRETS = ['JWT_SECRET', 'MESSENGER_MEDIA_TOKEN_SECRET', 'MESSENGER_TURN_SECRET'] as const;

/**
 * The password of the local broker's SASL user (scripts/kafka.sh, .env.example): public, so a broker
 * that takes it is not one to send production events to.
 */
export const LOCAL_KAFKA_SASL_PASSWORD = 'pin-local-secret';

/** HS256 wants a key at least as long as its 256-bit output; the TURN secret is held to the same bar. */
export const MIN_SECRET_BYTES = 32;

export interface InsecureSetting {
  setting: string;
  problem: string;
}

type SafetySettings = Pick<Config, (typeof GUARDED_SECRETS)[number] | 'DATABASE_URL' | 'KAFKA_BROKERS' | 'ALLOW_INSECURE_DEFAULTS'> &
  Partial<Pick<Config, 'KAFKA_SASL_PASSWORD' | 'AUTH_JWKS_URL' | 'AUTH_ISSUER' | 'AUTH_AUDIENCE' | 'NOTIFICATIONS_SMTP_HOST' | 'NOTIFICATIONS_SMTP_TLS' | 'METRICS_PORT' | 'METRICS_SCRAPE_SECRET'>>;

export function shippedDefault(setting: (typeof GUARDED_SECRETS)[number]): string {
  return (ConfigSchema.properties[setting] as { default: string }).default;
}

/** Every setting that would be unsafe on a shared deployment, whatever the mode. */
export function insecureSettings(settings: SafetySettings): InsecureSetting[] {
  const found: InsecureSetting[] = [];
  for (const setting of GUARDED_SECRETS) {
    const value = settings[setting];
    const bytes = Buffer.byteLength(value, 'utf8');
    if (value === shippedDefault(setting)) {
      found.push({ setting, problem: `is the shipped default (public in .env.example); set at least ${MIN_SECRET_BYTES} random bytes` });
    } else if (bytes < MIN_SECRET_BYTES) {
      found.push({ setting, problem: `is ${bytes} bytes long; at least ${MIN_SECRET_BYTES} are needed` });
    }
  }
  if (settings.KAFKA_SASL_PASSWORD === LOCAL_KAFKA_SASL_PASSWORD) {
    found.push({ setting: 'KAFKA_SASL_PASSWORD', problem: "is the local broker's password (public in .env.example and scripts/kafka.sh); use the broker's own" });
  }
  // The bus follows KAFKA_BROKERS (once also an EVENT_BUS setting, which only ever had to agree with it).
  if (!settings.KAFKA_BROKERS) {
    found.push({
      setting: 'KAFKA_BROKERS',
      problem: 'is unset, so integration events would stay in this replica (in-process event bus); set KAFKA_BROKERS',
    });
  }
  // On PORT, /metrics answers whoever reaches the API (topic names, refusal counts): either a
  // listener of its own, which the load balancer does not expose, or a secret the scraper presents.
  if (settings.METRICS_PORT === undefined && !settings.METRICS_SCRAPE_SECRET) {
    found.push({
      setting: 'METRICS_SCRAPE_SECRET',
      problem: 'is unset while /metrics is served on PORT (METRICS_PORT unset), so anyone who reaches the API reads it; set METRICS_PORT (a listener kept off the load balancer) or METRICS_SCRAPE_SECRET (at least 32 random bytes, sent by Prometheus as a bearer token)',
    });
  }
  // Plain SMTP is an explicit choice already; on a shared deployment it also needs ALLOW_INSECURE_DEFAULTS.
  if (settings.NOTIFICATIONS_SMTP_HOST && settings.NOTIFICATIONS_SMTP_TLS === 'none') {
    found.push({
      setting: 'NOTIFICATIONS_SMTP_TLS',
      problem: 'is none: SMTP credentials and every email would cross the network in clear; use starttls or implicit',
    });
  }
  // loadConfig refuses these unless ALLOW_INSECURE_DEFAULTS; allowed, they are warned about here.
  for (const p of jwksProblems(settings)) {
    const at = p.indexOf(': ');
    found.push({ setting: p.slice(0, at), problem: p.slice(at + 2) });
  }
  return found;
}

export type StartupVerdict =
  | { action: 'start'; warnings: InsecureSetting[] }
  | { action: 'refuse'; problems: InsecureSetting[] };

/** Settings in, what start-up does out: refuse (naming each setting), start with warnings, or start. */
export function startupVerdict(settings: SafetySettings): StartupVerdict {
  // The embedded PostgreSQL is the local-use case `npm start` serves: nothing there is shared.
  if (!settings.DATABASE_URL) return { action: 'start', warnings: [] };
  const found = insecureSettings(settings);
  if (found.length === 0) return { action: 'start', warnings: [] };
  if (settings.ALLOW_INSECURE_DEFAULTS) return { action: 'start', warnings: found };
  return { action: 'refuse', problems: found };
}

/** What main.ts calls once, before anything starts: exits 1 on a refusal, logs a warning per setting otherwise. */
export function enforceStartupSafety(
  config: SafetySettings,
  log: { warn(obj: object, msg: string): void },
  io: { stderr: { write(s: string): unknown }; exit(code: number): never } = process,
): void {
  const verdict = startupVerdict(config);
  if (verdict.action === 'refuse') {
    io.stderr.write(
      'refusing to start on a real database (DATABASE_URL is set) with insecure settings:\n' +
        verdict.problems.map((p) => `  - ${p.setting}: ${p.problem}\n`).join('') +
        '(ALLOW_INSECURE_DEFAULTS=true starts anyway and logs each of them as a warning)\n',
    );
    io.exit(1);
  }
  for (const { setting, problem } of verdict.action === 'start' ? verdict.warnings : []) {
    log.warn({ setting }, `insecure setting allowed by ALLOW_INSECURE_DEFAULTS=true: ${setting}: ${problem}`);
  }
}
