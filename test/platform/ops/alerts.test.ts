import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderAlertRules, ALERT_RULES_PATH } from '../../../scripts/alert-rules.ts';
import { readFileSync } from 'node:fs';
import { ALERT_RULES } from '../../../src/platform/ops/alert-rules.ts';
import { Registry } from 'prom-client';
import { createJobMetrics } from '../../../src/platform/jobs/job-metrics.ts';
import type { JobInfo } from '../../../src/platform/jobs/index.ts';
import { annotatePauses } from '../../../src/platform/ops/alert-pauses.ts';
import { createAlertEvaluator } from '../../../src/platform/ops/alerts.ts';
import { parsePromQL } from '../../../src/platform/ops/promql-parse.ts';
import { evaluate, type Sample } from '../../../src/platform/ops/promql-eval.ts';

/**
 * The console evaluates deploy/prometheus's own expressions: the generated rule list is current,
 * every rule parses, and the constructs the rules use give Prometheus's answers on known samples.
 */

const MIN = 60_000;
const T = 100 * MIN;
const s = (at: number, series: [string, Record<string, string>, number][]): Sample => ({ at, series: series.map(([name, labels, value]) => ({ name, labels, value })) });
const run = (expr: string, history: Sample[], now = T) => evaluate(parsePromQL(expr), history, now);

test('src/platform/ops/alert-rules.ts is what `npm run alert-rules` writes from deploy/prometheus, and every rule parses', () => {
  assert.equal(readFileSync(ALERT_RULES_PATH, 'utf8'), renderAlertRules(), 'stale: run `npm run alert-rules`');
  assert.ok(ALERT_RULES.length >= 30);
  for (const rule of ALERT_RULES) assert.doesNotThrow(() => parsePromQL(rule.expr), rule.alert);
});

test('threshold over an aggregation, by labels, with and / or / unless / absent / time()', () => {
  const h = [s(T - 12 * MIN, [['c', { code: 'A' }, 1]]), s(T - MIN, [['g', { ch: 'sms' }, 150], ['g', { ch: 'email' }, 5], ['c', { code: 'A' }, 1], ['c', { code: 'B' }, 2]])];
  assert.deepEqual(run('max by (ch) (g) > 100', h), [{ labels: { ch: 'sms' }, value: 150 }]);
  assert.deepEqual(run('max(g) > 1000', h), []);
  // A counter that appeared within the window fires through `unless … offset`.
  assert.deepEqual(run('sum by (code) (c unless c offset 10m) > 0', h), [{ labels: { code: 'B' }, value: 2 }]);
  assert.deepEqual(run('absent(nothing{job="x"})', h), [{ labels: { job: 'x' }, value: 1 }]);
  assert.deepEqual(run('time() - max(g) > 0', h), [{ labels: {}, value: T / 1000 - 150 }]);
  assert.deepEqual(run('max(g) > 100 and max(g) > 200 or max(g) > 120', h), [{ labels: {}, value: 150 }]);
  assert.deepEqual(run('g{ch!~"s.*"}', h), [{ labels: { ch: 'email' }, value: 5 }]);
});

test('increase, rate and delta over the samples in range (counter resets counted), histogram_quantile over buckets', () => {
  const h = [0, 1, 2, 3, 4].map((i) => s(T - (4 - i) * MIN, [['c_total', {}, [0, 5, 2, 4, 10][i]!], ['g', {}, [10, 3, 7, 1, 12][i]!]]));
  assert.deepEqual(run('increase(c_total[5m])', h), [{ labels: {}, value: 5 + 2 + 2 + 6 }]);
  assert.deepEqual(run('rate(c_total[5m])', h), [{ labels: {}, value: 15 / 300 }]);
  assert.deepEqual(run('delta(g[2m])', h), [{ labels: {}, value: 12 - 1 }]);
  const b = (le: string, n: number): [string, Record<string, string>, number] => ['l_bucket', { le }, n];
  const hist = [s(T - 4 * MIN, [b('0.5', 0), b('1', 0), b('+Inf', 0)]), s(T, [b('0.5', 50), b('1', 90), b('+Inf', 100)])];
  const [q] = run('histogram_quantile(0.5, sum by (le) (rate(l_bucket[5m])))', hist) as { value: number }[];
  assert.ok(Math.abs(q!.value - 0.5) < 1e-9);
});

test('a construct outside the subset is refused, not evaluated wrongly', () => {
  assert.throws(() => parsePromQL('a > on(job) b'));
  assert.throws(() => parsePromQL('topk(3, a)'));
});

test('a planned pause holds the job\'s not-running alert back (job_paused), shown as held with the pause; past its expected end it fires again', async () => {
  const registry = new Registry();
  const job = 'messenger-realtime-dispatch';
  const metrics = createJobMetrics(registry);
  metrics.declare(job);
  metrics.recordSuccessAt(job, new Date(T - 10 * MIN));
  const rules = ALERT_RULES.filter((r) => r.alert === 'MessengerRealtimeDispatchNotRunning');
  const evaluator = createAlertEvaluator(registry, rules, { sampleEveryMs: 1000, keepMs: 60 * MIN, now: () => T });
  const pausedJob = (until: Date | null) => ({ name: job, pausedAt: new Date(T - 5 * MIN), pausedBy: 'u1', pauseReason: 'Redis failover drill', pauseUntil: until }) as unknown as JobInfo;
  const now = new Date(T);

  await evaluator.tick();
  assert.deepEqual(evaluator.view().alerts.map((a) => a.alert), ['MessengerRealtimeDispatchNotRunning'], 'not paused: it is active');

  const end = new Date(T + 30 * MIN);
  metrics.recordPauses(new Map([[job, end]]));
  await evaluator.tick();
  const held = annotatePauses(evaluator.view(), [pausedJob(end)], now, rules);
  assert.deepEqual(held.alerts, [], 'held back by the planned pause');
  assert.deepEqual(held.held.map((h) => [h.alert, h.labels.job, h.annotations.pause_reason]), [['MessengerRealtimeDispatchNotRunning', job, 'Redis failover drill']]);

  const passed = new Date(T - MIN);
  metrics.recordPauses(new Map([[job, passed]]));
  await evaluator.tick();
  const overdue = annotatePauses(evaluator.view(), [pausedJob(passed)], now, rules);
  assert.deepEqual(overdue.held, []);
  assert.deepEqual(overdue.alerts.map((a) => [a.alert, a.annotations.pause_overdue]), [['MessengerRealtimeDispatchNotRunning', 'true']]);
});
