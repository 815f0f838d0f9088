import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { buildTestApp } from '../support/app.ts';

/** What the deploy tests share: promtool, the rule files, the metric names of an expression, and what the app exports. */

export const ROOT = new URL('../..', import.meta.url).pathname;
export const PROMETHEUS_DIR = join(ROOT, 'deploy/prometheus');

/** Runs promtool (scripts/test.ts installs it); a missing binary fails with what to install. */
export function promtool(args: string[], cwd = ROOT): { status: number; output: string } {
  const res = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  if (res.error) throw new Error(`promtool could not run (${res.error.message}): install Debian's prometheus package (apt-get install -y prometheus), as npm test does`);
  return { status: res.status ?? 1, output: `${res.stdout}${res.stderr}` };
}

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export const ruleFiles = (): string[] => readdirSync(PROMETHEUS_DIR).filter((f) => f.endsWith('.rules.yml')).sort();

export function alertRules(file: string): AlertRule[] {
  const doc = parse(readFileSync(join(PROMETHEUS_DIR, file), 'utf8')) as { groups: { rules: AlertRule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'inf', 'nan']);

/**
 * The metric names an expression selects. Label matchers, strings, ranges and grouping clauses go
 * first; what is left that is neither a function or aggregation (followed by "("), a keyword nor
 * part of a number or duration is a metric name. Enough for the expressions this repository writes.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w.:])[a-zA-Z_:][\w:]*/g)) {
    const rest = bare.slice(m.index + m[0].length);
    if (/^\s*\(/.test(rest) || KEYWORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0]);
  }
  return [...names];
}

/**
 * Every metric name the running app exports (from the `# TYPE` lines, so a metric without samples
 * yet counts), with the `_bucket`/`_sum`/`_count` series of its histograms. The app runs with its
 * background work started (in-process bus), which registers the consumer and job metrics.
 */
export async function exportedMetricNames(): Promise<Set<string>> {
  const { app } = await buildTestApp({ JOBS_ENABLED: 'true' }, { logLevel: 'error' });
  await app.platform.startBackground();
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}`);
  const names = new Set<string>();
  for (const [, name, type] of res.body.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${name}${s}`);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(`${name}${s}`);
  }
  return names;
}
