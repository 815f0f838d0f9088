import type { Expr, Matcher } from './promql-parse.ts';
import { OPS_DEFAULTS } from './defaults.ts';

/**
 * Evaluates a parsed expression (promql-parse.ts) at one instant over samples of the service's own
 * metrics taken by the console's sampler (alerts.ts). Differences from Prometheus, all on the safe
 * side for "would it fire now": `increase`/`rate` add up the increases between the samples in the
 * range (counter resets handled) without extrapolating to the range's edges; `delta` is last −
 * first; an instant selector takes each series' newest sample up to 5 minutes old.
 */

export type Labels = Record<string, string>;
export interface Series {
  name: string;
  labels: Labels;
  value: number;
}
/** One scrape of the registry: every series with its value, at `at` (epoch ms). */
export interface Sample {
  at: number;
  series: Series[];
}
export interface Element {
  labels: Labels;
  value: number;
}
export type Value = number | Element[];

const keyOf = (labels: Labels): string =>
  Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');

function matches(s: Series, name: string, matchers: Matcher[]): boolean {
  if (s.name !== name) return false;
  return matchers.every((m) => {
    const v = s.labels[m.label] ?? '';
    if (m.op === '=') return v === m.value;
    if (m.op === '!=') return v !== m.value;
    const re = new RegExp(`^(?:${m.value})$`);
    return m.op === '=~' ? re.test(v) : !re.test(v);
  });
}

/** Each matching series' values in (from, to], oldest first. */
function window(history: readonly Sample[], sel: Extract<Expr, { type: 'selector' }>, from: number, to: number): Map<string, { labels: Labels; values: number[] }> {
  const out = new Map<string, { labels: Labels; values: number[] }>();
  for (const sample of history) {
    if (sample.at <= from || sample.at > to) continue;
    for (const s of sample.series) {
      if (!matches(s, sel.name, sel.matchers)) continue;
      const key = keyOf(s.labels);
      const entry = out.get(key) ?? { labels: s.labels, values: [] };
      entry.values.push(s.value);
      out.set(key, entry);
    }
  }
  return out;
}

function increaseOf(values: number[]): number {
  let total = 0;
  for (let i = 1; i < values.length; i++) total += values[i]! >= values[i - 1]! ? values[i]! - values[i - 1]! : values[i]!;
  return total;
}

function rangeFunction(fn: string, arg: Expr, history: readonly Sample[], now: number): Element[] {
  if (arg.type !== 'selector' || arg.rangeMs === undefined) throw new Error(`${fn}() needs a range selector`);
  const to = now - arg.offsetMs;
  const out: Element[] = [];
  for (const { labels, values } of window(history, arg, to - arg.rangeMs, to).values()) {
    if (values.length < 2) continue;
    const inc = fn === 'delta' ? values[values.length - 1]! - values[0]! : increaseOf(values);
    out.push({ labels, value: fn === 'rate' ? inc / (arg.rangeMs / 1000) : inc });
  }
  return out;
}

function quantile(q: number, buckets: Element[]): Element[] {
  const groups = new Map<string, { labels: Labels; buckets: { le: number; count: number }[] }>();
  for (const b of buckets) {
    const { le, ...rest } = b.labels;
    if (le === undefined) continue;
    const key = keyOf(rest);
    const g = groups.get(key) ?? { labels: rest, buckets: [] };
    g.buckets.push({ le: le === '+Inf' ? Infinity : Number(le), count: b.value });
    groups.set(key, g);
  }
  const out: Element[] = [];
  for (const { labels, buckets: bs } of groups.values()) {
    bs.sort((a, b) => a.le - b.le);
    const total = bs[bs.length - 1]?.count ?? 0;
    if (total === 0 || !Number.isFinite(q)) continue;
    const rank = q * total;
    const i = bs.findIndex((b) => b.count >= rank);
    const upper = bs[i]!;
    if (upper.le === Infinity) {
      out.push({ labels, value: bs[bs.length - 2]?.le ?? 0 });
      continue;
    }
    const lower = i === 0 ? { le: 0, count: 0 } : bs[i - 1]!;
    const inBucket = upper.count - lower.count;
    out.push({ labels, value: lower.le + (inBucket === 0 ? 0 : ((upper.le - lower.le) * (rank - lower.count)) / inBucket) });
  }
  return out;
}

function aggregate(op: string, by: string[], vector: Element[]): Element[] {
  const groups = new Map<string, { labels: Labels; values: number[] }>();
  for (const e of vector) {
    const labels = Object.fromEntries(by.filter((l) => e.labels[l] !== undefined).map((l) => [l, e.labels[l]!]));
    const key = keyOf(labels);
    const g = groups.get(key) ?? { labels, values: [] };
    g.values.push(e.value);
    groups.set(key, g);
  }
  const fold: Record<string, (v: number[]) => number> = {
    sum: (v) => v.reduce((a, b) => a + b, 0),
    max: (v) => Math.max(...v),
    min: (v) => Math.min(...v),
    count: (v) => v.length,
  };
  return [...groups.values()].map((g) => ({ labels: g.labels, value: fold[op]!(g.values) }));
}

const ARITHMETIC: Record<string, (a: number, b: number) => number> = { '+': (a, b) => a + b, '-': (a, b) => a - b, '*': (a, b) => a * b, '/': (a, b) => a / b };
const COMPARE: Record<string, (a: number, b: number) => boolean> = {
  '==': (a, b) => a === b,
  '!=': (a, b) => a !== b,
  '>': (a, b) => a > b,
  '<': (a, b) => a < b,
  '>=': (a, b) => a >= b,
  '<=': (a, b) => a <= b,
};

function binary(op: string, lhs: Value, rhs: Value): Value {
  if (op === 'and' || op === 'or' || op === 'unless') {
    if (typeof lhs === 'number' || typeof rhs === 'number') throw new Error(`${op} needs two vectors`);
    const right = new Set(rhs.map((e) => keyOf(e.labels)));
    if (op === 'and') return lhs.filter((e) => right.has(keyOf(e.labels)));
    if (op === 'unless') return lhs.filter((e) => !right.has(keyOf(e.labels)));
    const left = new Set(lhs.map((e) => keyOf(e.labels)));
    return [...lhs, ...rhs.filter((e) => !left.has(keyOf(e.labels)))];
  }
  const apply = (a: number, b: number): number | undefined =>
    ARITHMETIC[op] ? ARITHMETIC[op](a, b) : COMPARE[op]!(a, b) ? a : undefined;
  if (typeof lhs === 'number' && typeof rhs === 'number') return apply(lhs, rhs) ?? 0;
  if (typeof rhs === 'number') return (lhs as Element[]).flatMap((e) => {
    const v = apply(e.value, rhs);
    return v === undefined ? [] : [{ labels: e.labels, value: v }];
  });
  if (typeof lhs === 'number') return rhs.flatMap((e) => {
    const v = apply(lhs, e.value);
    // A comparison keeps the vector's value (PromQL: the vector side's sample).
    return v === undefined ? [] : [{ labels: e.labels, value: ARITHMETIC[op] ? v : e.value }];
  });
  const right = new Map(rhs.map((e) => [keyOf(e.labels), e.value]));
  return lhs.flatMap((e) => {
    const r = right.get(keyOf(e.labels));
    const v = r === undefined ? undefined : apply(e.value, r);
    return v === undefined ? [] : [{ labels: e.labels, value: v }];
  });
}

function instant(sel: Extract<Expr, { type: 'selector' }>, history: readonly Sample[], now: number): Element[] {
  const to = now - sel.offsetMs;
  const newest = new Map<string, Element>();
  for (const { labels, values } of window(history, sel, to - OPS_DEFAULTS.opsAlertLookbackMs, to).values()) newest.set(keyOf(labels), { labels, value: values[values.length - 1]! });
  return [...newest.values()];
}

/** The expression's value at `now` (epoch ms) over `history` (samples, oldest first). */
export function evaluate(expr: Expr, history: readonly Sample[], now: number): Value {
  switch (expr.type) {
    case 'number':
      return expr.value;
    case 'selector':
      if (expr.rangeMs !== undefined) throw new Error('a range selector needs a function');
      return instant(expr, history, now);
    case 'agg': {
      const v = evaluate(expr.arg, history, now);
      return typeof v === 'number' ? v : aggregate(expr.op, expr.by, v);
    }
    case 'binary':
      return binary(expr.op, evaluate(expr.lhs, history, now), evaluate(expr.rhs, history, now));
    case 'call':
      return call(expr, history, now);
  }
}

function call(expr: Extract<Expr, { type: 'call' }>, history: readonly Sample[], now: number): Value {
  const [a, b] = expr.args;
  switch (expr.fn) {
    case 'time':
      return now / 1000;
    case 'absent': {
      const v = evaluate(a!, history, now);
      if (typeof v === 'number' || v.length > 0) return [];
      const labels = a!.type === 'selector' ? Object.fromEntries(a!.matchers.filter((m) => m.op === '=').map((m) => [m.label, m.value])) : {};
      return [{ labels, value: 1 }];
    }
    case 'histogram_quantile': {
      const q = evaluate(a!, history, now);
      const buckets = evaluate(b!, history, now);
      if (typeof q !== 'number' || typeof buckets === 'number') throw new Error('histogram_quantile(scalar, vector)');
      return quantile(q, buckets);
    }
    default:
      return rangeFunction(expr.fn, a!, history, now);
  }
}
