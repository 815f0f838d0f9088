/**
 * `npm run env-example`: writes .env.example from the settings schema (src/config.ts), so the list of
 * settings, their descriptions, defaults and bounds have one source. `--check` only compares and
 * exits 1 when the file is stale (the test command's checks run it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { TSchema } from '@sinclair/typebox';
import { ConfigSchema } from '../src/config.ts';
import { formatDuration, isDuration } from '../src/platform/types/index.ts';

export const ENV_EXAMPLE_PATH = new URL('../.env.example', import.meta.url).pathname;
export const REGENERATE_COMMAND = 'npm run env-example';

/** Sections of the file, in order: a setting goes to the first whose prefix (or exact name) it has. */
const SECTIONS: [title: string, prefixes: string[]][] = [
  ['HTTP server', ['HOST', 'PORT', 'METRICS_', 'TRUST_PROXY', 'CORS_', 'HTTP_', 'API_DOCS_', 'LOG_LEVEL', 'SHUTDOWN_']],
  ['Tracing (OpenTelemetry; the SDK reads the other standard OTEL_* variables itself)', ['OTEL_']],
  ['PostgreSQL', ['DATABASE_', 'EMBEDDED_PG_', 'DB_']],
  ['Kafka and the event bus', ['KAFKA_', 'CONSUMER_']],
  ['Realtime hub (/hubs/messenger) and its Redis backplane', ['REDIS_', 'REALTIME_', 'HUB_']],
  ['Auth', ['JWT_', 'AUTH_', 'ALLOW_INSECURE_DEFAULTS']],
  ['Background work: jobs, integration outbox and inbox', ['JOBS_', 'OUTBOX_', 'INBOX_']],
  ['Identity (roles, assignments, access fan-out — seed 003)', ['IDENTITY_']],
  ['User activity (sessions, views, activity closer — seed 001)', ['USER_ACTIVITY_']],
  ['Notifications (dispatcher, retry worker, providers, webhooks — seed 004)', ['NOTIFICATIONS_']],
  ['Messenger (chats, messages, calls, realtime dispatch, contact search — seeds 000, 002)', ['MESSENGER_', 'ELASTICSEARCH_']],
];

const WIDTH = 110;

function wrap(text: string): string[] {
  const lines: string[] = [];
  let line = '#';
  for (const word of text.split(/\s+/)) {
    if (line.length + 1 + word.length > WIDTH && line !== '#') {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  lines.push(line);
  return lines;
}

function show(field: TSchema, value: unknown): string {
  return isDuration(field) && typeof value === 'number' ? formatDuration(value) : String(value);
}

function entry(name: string, field: TSchema): string[] {
  const lines = wrap(field.description ?? name);
  const { minimum, maximum } = field as { minimum?: number; maximum?: number };
  const facts: string[] = [];
  if (isDuration(field)) facts.push('duration');
  if (minimum !== undefined && maximum !== undefined) facts.push(`${show(field, minimum)} to ${show(field, maximum)}`);
  else if (minimum !== undefined) facts.push(`at least ${show(field, minimum)}`);
  else if (maximum !== undefined) facts.push(`at most ${show(field, maximum)}`);
  const choices = (field.anyOf as TSchema[] | undefined)?.map((c) => c.const).filter((c) => c !== undefined);
  if (choices && choices.length > 0) facts.push(`one of ${choices.join(', ')}`);
  if (facts.length > 0) lines.push(`# (${facts.join('; ')})`);
  if (field.default === undefined) lines.push(`# ${name}=${field.examples?.[0] ?? ''}`);
  else lines.push(`${name}=${show(field, field.default)}`);
  return lines;
}

export function renderEnvExample(): string {
  const fields: Record<string, TSchema> = ConfigSchema.properties;
  const sectionOf = (name: string) => {
    const i = SECTIONS.findIndex(([, prefixes]) => prefixes.some((p) => name.startsWith(p)));
    return i === -1 ? SECTIONS.length : i;
  };
  const out = [
    '# Every setting of the service, with its default. Generated from the settings schema by',
    `# \`${REGENERATE_COMMAND}\` (do not edit by hand). Copy to .env (or export) and change what you need.`,
    '# An invalid value, or a setting that was renamed or removed, makes the process exit non-zero naming each.',
    '# Durations are written 500ms, 30s, 5m, 24h or 7d (or a sum such as 1h30m); a bare number is refused.',
  ];
  for (let i = 0; i <= SECTIONS.length; i++) {
    const names = Object.keys(fields).filter((n) => sectionOf(n) === i);
    if (names.length === 0) continue;
    out.push('', `# --- ${SECTIONS[i]?.[0] ?? 'Other'} ---`);
    for (const name of names) out.push(...entry(name, fields[name]!));
  }
  return `${out.join('\n')}\n`;
}

/** Why `current` (the file's text) is stale, or undefined when it is what the schema generates. */
export function envExampleStaleness(current: string): string | undefined {
  if (current === renderEnvExample()) return undefined;
  return `.env.example is stale: it differs from what the settings schema generates; run \`${REGENERATE_COMMAND}\` and commit the result`;
}

if (import.meta.main) {
  if (process.argv.includes('--check')) {
    const problem = envExampleStaleness(readFileSync(ENV_EXAMPLE_PATH, 'utf8'));
    if (problem) {
      process.stderr.write(`${problem}\n`);
      process.exit(1);
    }
  } else {
    writeFileSync(ENV_EXAMPLE_PATH, renderEnvExample());
  }
}
