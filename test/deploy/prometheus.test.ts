import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { ConfigSchema } from '../../src/config.ts';
import { alertRules, exportedMetricNames, metricNames, PROMETHEUS_DIR, promtool, ROOT, ruleFiles } from './promql.ts';

/** deploy/prometheus as on-call deploys it: valid rules, each alert unit-tested, documented and built on exported metrics. */
describe('deploy/prometheus alert rules', () => {
  test('promtool check rules accepts every rules file', () => {
    const files = ruleFiles();
    assert.ok(files.length >= 5, `rules files: ${files.join(', ')}`);
    const res = promtool(['check', 'rules', ...files], PROMETHEUS_DIR);
    assert.equal(res.status, 0, res.output);
  });

  test('promtool test rules: each rules file has its unit test file, and every alert is shown firing and staying silent', () => {
    for (const file of ruleFiles()) {
      const testFile = join('tests', file.replace(/\.rules\.yml$/, '.test.yml'));
      assert.ok(existsSync(join(PROMETHEUS_DIR, testFile)), `${testFile} exists`);
      const res = promtool(['test', 'rules', testFile], PROMETHEUS_DIR);
      assert.equal(res.status, 0, `${testFile}:\n${res.output}`);
    }
  });

  test('every alert has a unique name, severity, summary, description and a runbook_url naming an existing docs/runbooks/<alert>.md', () => {
    const seen = new Set<string>();
    for (const file of ruleFiles()) {
      for (const rule of alertRules(file)) {
        assert.ok(!seen.has(rule.alert), `${rule.alert} is defined once`);
        seen.add(rule.alert);
        assert.ok(['critical', 'warning'].includes(rule.labels?.severity ?? ''), `${rule.alert}: severity critical|warning`);
        assert.ok(rule.annotations?.summary, `${rule.alert}: summary`);
        assert.ok(rule.annotations?.description, `${rule.alert}: description`);
        assert.equal(rule.annotations?.runbook_url, `docs/runbooks/${rule.alert}.md`, `${rule.alert}: runbook_url`);
        assert.ok(existsSync(join(ROOT, rule.annotations.runbook_url)), `${rule.annotations.runbook_url} exists`);
      }
    }
  });

  test('docs/runbooks holds exactly one runbook per alert, each listed in its index', () => {
    const alerts = ruleFiles().flatMap((f) => alertRules(f).map((r) => r.alert)).sort();
    const runbooks = readdirSync(join(ROOT, 'docs/runbooks')).filter((f) => f !== 'README.md').map((f) => f.replace(/\.md$/, '')).sort();
    assert.deepEqual(runbooks, alerts, 'no runbook without its alert, no alert without its runbook');
    const index = readFileSync(join(ROOT, 'docs/runbooks/README.md'), 'utf8');
    for (const alert of alerts) assert.ok(index.includes(`[${alert}](${alert}.md)`), `docs/runbooks/README.md lists ${alert}`);
  });

  test('every metric a rule reads is exported by the running service', async () => {
    const exported = await exportedMetricNames();
    const missing = ruleFiles().flatMap((file) =>
      alertRules(file).flatMap((r) => metricNames(r.expr).filter((m) => !exported.has(m)).map((m) => `${file} ${r.alert}: ${m}`)),
    );
    assert.deepEqual(missing, []);
  });

  test('the example scrape config is valid and scrapes /metrics either on METRICS_PORT or with the scrape secret', () => {
    const file = 'scrape.example.yml';
    const res = promtool(['check', 'config', '--syntax-only', file], PROMETHEUS_DIR);
    assert.equal(res.status, 0, res.output);
    type Job = { job_name: string; authorization?: { type: string; credentials_file?: string }; static_configs: { targets: string[] }[] };
    const jobs = (parse(readFileSync(join(PROMETHEUS_DIR, file), 'utf8')) as { scrape_configs: Job[] }).scrape_configs;
    const portOf = (job: Job) => Number(job.static_configs[0]!.targets[0]!.split(':').pop());
    const metricsPort = (ConfigSchema.properties.METRICS_PORT as { examples: number[] }).examples[0];
    const apiPort = (ConfigSchema.properties.PORT as { default: number }).default;
    assert.deepEqual(jobs.map((j) => [portOf(j), j.authorization?.type ?? 'none']), [[metricsPort, 'none'], [apiPort, 'Bearer']], 'the API port is scraped only with the secret');
    assert.ok(jobs[1]!.authorization!.credentials_file, 'the secret is read from a file, never written into prometheus.yml');
  });

  test('the metric-name reader sees through matchers, ranges, grouping, offsets and functions', () => {
    assert.deepEqual(
      metricNames('sum by (consumer, code) (increase(a_total{consumer!="x",le="+Inf"}[10m])) > 0 or sum by (code) (b unless b offset 10m) > 0'),
      ['a_total', 'b'],
    );
    assert.deepEqual(metricNames('histogram_quantile(0.95, sum by (le) (rate(h_bucket[5m]))) > 1'), ['h_bucket']);
    assert.deepEqual(metricNames('time() - max by (job) (j{job="a"}) > 60 or absent(j{job="a"})'), ['j']);
  });
});
