import type { Registry } from 'prom-client';
import { durationMs, parsePromQL, type Expr } from './promql-parse.ts';
import { evaluate, type Labels, type Sample, type Series } from './promql-eval.ts';

/**
 * "The alerts that would fire now": the rules of deploy/prometheus (alert-rules.ts, generated from
 * them) evaluated on this replica's own metrics. A sampler reads the registry every `sampleEveryMs`
 * (as a scrape would) and keeps `keepMs` of samples for the rules' ranges and offsets; each sample
 * evaluates every rule, and a rule true for its whole `for` is firing (pending before). Prometheus
 * aggregates every replica; here the database-backed gauges already cover the whole system, while
 * per-process counters (job failures on another replica) are only this replica's.
 */

export interface AlertRule {
  alert: string;
  group: string;
  expr: string;
  for?: string;
  severity: string;
  summary: string;
  /** Repo-relative, docs/runbooks/<alert>.md. */
  runbook: string;
}

export interface AlertState {
  alert: string;
  severity: string;
  summary: string;
  runbook: string;
  expr: string;
  state: 'firing' | 'pending';
  labels: Labels;
  /** Set by the console from what it knows beyond the metrics (alert-pauses.ts: a job paused by an operator). */
  annotations: Record<string, string>;
  value: number;
  activeSince: string;
}

export interface AlertsView {
  evaluatedAt: string | null;
  /** Seconds of samples held: a rule whose range or offset reaches further sees less than Prometheus would. */
  historySeconds: number;
  rules: number;
  alerts: AlertState[];
  /** Rules that failed to evaluate (their message), so a gap is visible, not silent. */
  errors: { alert: string; error: string }[];
  /** Rules an operator's planned pause of a job holds back (alert-pauses.ts), with the pause. */
  held: HeldAlert[];
}

export interface HeldAlert {
  alert: string;
  severity: string;
  summary: string;
  runbook: string;
  labels: Labels;
  annotations: Record<string, string>;
}

export interface AlertEvaluator {
  /** Samples now and evaluates (the sampler's tick; tests call it directly). */
  tick(): Promise<void>;
  view(): AlertsView;
  /**
   * The samples kept of a metric, per label set, oldest first (the overview's sparklines): only
   * metrics the rules read or `opts.alsoSample` names are sampled.
   */
  series(name: string): { labels: Labels; points: { at: number; value: number }[] }[];
  /** Starts the sampler (idempotent); it stops with stop(). */
  start(): void;
  stop(): void;
}

/** The registry as series: histogram buckets as `<name>_bucket{le}`, like the text format. */
async function sampleOf(registry: Registry, at: number, names: ReadonlySet<string>): Promise<Sample> {
  const series: Series[] = [];
  const wanted = [...names].flatMap((n) => registry.getSingleMetric(n) ?? registry.getSingleMetric(n.replace(/_bucket$/, '')) ?? []);
  for (const metric of await Promise.all([...new Set(wanted)].map((m) => m.get()))) {
    for (const v of metric.values as { value: number; labels: Record<string, string | number>; metricName?: string }[]) {
      const labels = Object.fromEntries(Object.entries(v.labels).map(([k, l]) => [k, l === Infinity ? '+Inf' : String(l)]));
      const name = v.metricName ?? metric.name;
      if (names.has(name)) series.push({ name, labels, value: v.value });
    }
  }
  return { at, series };
}

export function createAlertEvaluator(
  registry: Registry,
  rules: readonly AlertRule[],
  opts: { sampleEveryMs: number; keepMs: number; now?: () => number; alsoSample?: () => readonly string[] },
): AlertEvaluator {
  const now = opts.now ?? Date.now;
  const parsed = rules.map((rule) => {
    try {
      return { rule, expr: parsePromQL(rule.expr) as Expr | undefined, forMs: rule.for ? durationMs(rule.for) : 0, error: undefined };
    } catch (err) {
      return { rule, expr: undefined, forMs: 0, error: (err as Error).message };
    }
  });
  // Only the series the rules read are kept: a histogram's buckets of every metric would be most of it.
  const names = new Set<string>();
  const collect = (e: Expr | undefined): void => {
    if (!e) return;
    if (e.type === 'selector') names.add(e.name);
    else if (e.type === 'agg') collect(e.arg);
    else if (e.type === 'binary') (collect(e.lhs), collect(e.rhs));
    else if (e.type === 'call') e.args.forEach(collect);
  };
  for (const p of parsed) collect(p.expr);
  const history: Sample[] = [];
  const since = new Map<string, number>();
  let current: AlertsView = { evaluatedAt: null, historySeconds: 0, rules: rules.length, alerts: [], errors: [], held: [] };
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;

  function evaluateAll(at: number): AlertsView {
    const alerts: AlertState[] = [];
    const errors: AlertsView['errors'] = [];
    const active = new Set<string>();
    for (const { rule, expr, forMs, error } of parsed) {
      if (!expr) {
        errors.push({ alert: rule.alert, error: error ?? 'unparsed' });
        continue;
      }
      try {
        const value = evaluate(expr, history, at);
        const elements = typeof value === 'number' ? [] : value;
        for (const e of elements) {
          const key = `${rule.alert}|${JSON.stringify(e.labels)}`;
          active.add(key);
          const from = since.get(key) ?? at;
          since.set(key, from);
          const { alert, severity, summary, runbook } = rule;
          alerts.push({ alert, severity, summary, runbook, expr: rule.expr, state: at - from >= forMs ? 'firing' : 'pending', labels: e.labels, annotations: {}, value: e.value, activeSince: new Date(from).toISOString() });
        }
      } catch (err) {
        errors.push({ alert: rule.alert, error: (err as Error).message });
      }
    }
    for (const key of since.keys()) if (!active.has(key)) since.delete(key);
    const historySeconds = history.length > 0 ? Math.round((at - history[0]!.at) / 1000) : 0;
    return { evaluatedAt: new Date(at).toISOString(), historySeconds, rules: rules.length, alerts, errors, held: [] };
  }

  async function tick(): Promise<void> {
    const at = now();
    const sample = await sampleOf(registry, at, opts.alsoSample ? new Set([...names, ...opts.alsoSample()]) : names);
    // An overview asking between the sampler's ticks replaces the newest sample rather than adding
    // one, so the history stays at about one sample per sampleEveryMs however often it is asked.
    const previous = history[history.length - 2];
    if (previous && at - previous.at < opts.sampleEveryMs) history[history.length - 1] = sample;
    else history.push(sample);
    while (history.length > 0 && history[0]!.at < at - opts.keepMs) history.shift();
    current = evaluateAll(at);
  }

  return {
    tick: () => (ticking ??= tick().finally(() => (ticking = undefined))),
    view: () => current,
    series(name) {
      const byLabels = new Map<string, { labels: Labels; points: { at: number; value: number }[] }>();
      for (const sample of history) {
        for (const s of sample.series) {
          if (s.name !== name) continue;
          const key = JSON.stringify(s.labels);
          const entry = byLabels.get(key) ?? byLabels.set(key, { labels: s.labels, points: [] }).get(key)!;
          entry.points.push({ at: sample.at, value: s.value });
        }
      }
      return [...byLabels.values()];
    },
    start() {
      if (timer) return;
      void tick().catch(() => undefined);
      timer = setInterval(() => void tick().catch(() => undefined), opts.sampleEveryMs);
      timer.unref();
    },
    stop: () => clearInterval(timer),
  };
}
