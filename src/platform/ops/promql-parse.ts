/**
 * A parser for the part of PromQL the alert rules in deploy/prometheus use, so the console can
 * evaluate the same expressions on the service's own metrics (no maintained PromQL evaluator exists
 * for Node). Covered: instant and range selectors with `=`, `!=`, `=~`, `!~` matchers and `offset`;
 * `sum`, `max`, `min`, `count` with `by (…)` (before or after the argument); `increase`, `rate`,
 * `delta`, `absent`, `time`, `histogram_quantile`; `+ - * /` and the comparisons against a scalar
 * or between vectors; `and`, `or`, `unless`. Anything else is a ParseError naming it, so a rule
 * added with a construct not covered fails its test instead of evaluating wrongly.
 */

export type Matcher = { label: string; op: '=' | '!=' | '=~' | '!~'; value: string };

export type Expr =
  | { type: 'number'; value: number }
  | { type: 'selector'; name: string; matchers: Matcher[]; rangeMs?: number; offsetMs: number }
  | { type: 'call'; fn: string; args: Expr[] }
  | { type: 'agg'; op: string; by: string[]; arg: Expr }
  | { type: 'binary'; op: string; lhs: Expr; rhs: Expr };

export class ParseError extends Error {}

const FUNCTIONS = new Set(['increase', 'rate', 'delta', 'absent', 'time', 'histogram_quantile']);
const AGGREGATIONS = new Set(['sum', 'max', 'min', 'count']);
/** Binary operators by precedence, lowest first (PromQL's order). */
const LEVELS: string[][] = [['or'], ['and', 'unless'], ['==', '!=', '>=', '<=', '>', '<'], ['+', '-'], ['*', '/']];

const TOKEN = /\s*(?:(\d+(?:\.\d+)?(?:[smhd])?)|([A-Za-z_:][A-Za-z0-9_:]*)|("(?:[^"\\]|\\.)*")|(==|!=|>=|<=|=~|!~|[-+*/(){}[\],=<>]))/y;

function tokenize(text: string): string[] {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    if (/^\s*$/.test(text.slice(TOKEN.lastIndex))) break;
    const m = TOKEN.exec(text);
    if (!m) throw new ParseError(`cannot read "${text.slice(TOKEN.lastIndex, TOKEN.lastIndex + 20)}"`);
    tokens.push(m[1] ?? m[2] ?? m[3] ?? m[4]!);
  }
  return tokens;
}

/** `5m`, `30s`, `1h`, `1d` in milliseconds. */
export function durationMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([smhd])$/.exec(text);
  if (!m) throw new ParseError(`not a duration: ${text}`);
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
}

export function parsePromQL(text: string): Expr {
  const tokens = tokenize(text);
  let i = 0;
  const peek = () => tokens[i];
  const next = () => {
    const t = tokens[i++];
    if (t === undefined) throw new ParseError('unexpected end of expression');
    return t;
  };
  const expect = (t: string) => {
    const got = next();
    if (got !== t) throw new ParseError(`expected "${t}", found "${got}"`);
  };
  const labelList = (): string[] => {
    expect('(');
    const labels: string[] = [];
    while (peek() !== ')') {
      labels.push(next());
      if (peek() === ',') next();
    }
    expect(')');
    return labels;
  };
  const matchers = (): Matcher[] => {
    const list: Matcher[] = [];
    expect('{');
    while (peek() !== '}') {
      const label = next();
      const op = next();
      if (!['=', '!=', '=~', '!~'].includes(op)) throw new ParseError(`not a label matcher: ${op}`);
      list.push({ label, op: op as Matcher['op'], value: JSON.parse(next()) as string });
      if (peek() === ',') next();
    }
    expect('}');
    return list;
  };
  const selector = (name: string): Expr => {
    const sel: Extract<Expr, { type: 'selector' }> = { type: 'selector', name, matchers: peek() === '{' ? matchers() : [], offsetMs: 0 };
    if (peek() === '[') {
      next();
      sel.rangeMs = durationMs(next());
      expect(']');
    }
    if (peek() === 'offset') {
      next();
      sel.offsetMs = durationMs(next());
    }
    return sel;
  };
  const primary = (): Expr => {
    const t = next();
    if (t === '(') {
      const e = binary(0);
      expect(')');
      return e;
    }
    if (t === '-' ) return { type: 'binary', op: '-', lhs: { type: 'number', value: 0 }, rhs: primary() };
    if (/^\d/.test(t)) return { type: 'number', value: Number(t) };
    if (AGGREGATIONS.has(t)) {
      let by = peek() === 'by' ? (next(), labelList()) : undefined;
      expect('(');
      const arg = binary(0);
      expect(')');
      if (by === undefined && peek() === 'by') by = (next(), labelList());
      return { type: 'agg', op: t, by: by ?? [], arg };
    }
    if (FUNCTIONS.has(t) && peek() === '(') {
      next();
      const args: Expr[] = [];
      while (peek() !== ')') {
        args.push(binary(0));
        if (peek() === ',') next();
      }
      expect(')');
      return { type: 'call', fn: t, args };
    }
    if (/^[A-Za-z_:]/.test(t) && !LEVELS.flat().includes(t) && t !== 'offset' && t !== 'by') return selector(t);
    throw new ParseError(`not supported here: "${t}"`);
  };
  const binary = (level: number): Expr => {
    if (level === LEVELS.length) return primary();
    let lhs = binary(level + 1);
    while (peek() !== undefined && LEVELS[level]!.includes(peek()!)) {
      const op = next();
      if (['on', 'ignoring', 'group_left', 'group_right', 'bool'].includes(peek() ?? '')) throw new ParseError(`not supported: ${peek()}`);
      lhs = { type: 'binary', op, lhs, rhs: binary(level + 1) };
    }
    return lhs;
  };
  const expr = binary(0);
  if (i !== tokens.length) throw new ParseError(`unexpected "${tokens[i]}"`);
  return expr;
}
