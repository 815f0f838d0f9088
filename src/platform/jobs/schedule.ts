import { errorText } from '../errors/index.ts';
import { Cron } from 'croner';
import type { JobCounts, JobDefinition } from './types.ts';

/** job_state.name is varchar(100). */
export const JOB_NAME_MAX_LENGTH = 100;
/** setInterval clamps larger delays to 1 ms; anything longer belongs in a cron pattern. */
export const EVERY_MAX_MS = 2 ** 31 - 1;

/** The advisory-lock key text of a single-runner job (hashed with hashtext() in PostgreSQL). */
export const lockKeyOf = (job: string | Pick<JobDefinition, 'name' | 'lockKey'>): string =>
  typeof job === 'string' ? `job:scheduled:${job}` : (job.lockKey ?? `job:scheduled:${job.name}`);

/** One style for job names across metric labels, ops routes and logs. */
export const JOB_NAME_PATTERN = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** A parsed UTC cron pattern, without a timer. */
export function parseCron(pattern: string): Cron {
  const cron = new Cron(pattern, { timezone: 'UTC' });
  // croner reads a string with ':' as a one-off date, not a recurring pattern.
  if (cron.getPattern() === undefined) throw new TypeError(`'${pattern}' is a date, not a cron pattern`);
  return cron;
}

/**
 * Everything wrong with a definition, empty when it is usable. Checked at register, so a typo in a
 * schedule fails the deploy instead of silently never running.
 */
export function jobDefinitionProblems(job: JobDefinition): string[] {
  const problems: string[] = [];
  if (!job.name || job.name.length > JOB_NAME_MAX_LENGTH || job.name.trim() !== job.name) {
    problems.push(`name must be 1..${JOB_NAME_MAX_LENGTH} characters without surrounding spaces`);
  } else if (!JOB_NAME_PATTERN.test(job.name)) {
    problems.push('name must be lower-case words joined by "-" (e.g. messenger-realtime-dispatch)');
  }
  if ((job.every === undefined) === (job.cron === undefined)) {
    problems.push('exactly one of every and cron must be set');
  }
  if (job.every !== undefined && (!Number.isInteger(job.every) || job.every < 1 || job.every > EVERY_MAX_MS)) {
    problems.push(`every must be an integer number of milliseconds in 1..${EVERY_MAX_MS}`);
  }
  if (job.cron !== undefined) {
    try {
      parseCron(job.cron);
    } catch (err) {
      problems.push(`cron: ${errorText(err, { root: false, name: false })}`);
    }
  }
  if (job.wakeChannel !== undefined && (job.wakeChannel.length === 0 || job.wakeChannel.length > 63)) {
    problems.push('wakeChannel must be 1..63 characters (a PostgreSQL identifier)');
  }
  // How long (maxRunMs, lockTtlMs) is a setting loadConfig checked; whether a lock applies is the definition's.
  if (job.lockTtlMs !== undefined && !job.singleRunner) problems.push('lockTtlMs is for single-runner jobs');
  if (typeof job.run !== 'function') problems.push('run must be a function');
  return problems;
}

/** 90000 → "90s", 3600000 → "1h", 250 → "250ms". */
export function formatInterval(ms: number): string {
  const units: [number, string][] = [
    [3_600_000, 'h'],
    [60_000, 'm'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** What on-call reads in the job list: "every 5m", "cron 0 3 * * * (UTC)". */
export function describeSchedule(job: Pick<JobDefinition, 'every' | 'cron'>): string {
  if (job.every !== undefined) return `every ${formatInterval(job.every)}`;
  return `cron ${job.cron} (UTC)`;
}

/** A run that reported nothing, or only zeros, found no work: it logs at debug, not info. */
export function isIdleRun(counts: JobCounts): boolean {
  return Object.values(counts).every((n) => n === 0);
}

/** A job may return nothing; non-numeric values would poison the jsonb column and the log line. */
export function normalizeCounts(value: unknown): JobCounts {
  if (value === null || typeof value !== 'object') return {};
  const counts: JobCounts = {};
  for (const [key, n] of Object.entries(value)) if (typeof n === 'number' && Number.isFinite(n)) counts[key] = n;
  return counts;
}
