import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { exportedMetricNames, metricNames, promtool, ROOT } from './promql.ts';

/** deploy/grafana as Grafana provisions it: every panel's PromQL parses and reads only exported metrics. */

const DASHBOARDS = join(ROOT, 'deploy/grafana/dashboards');

interface Panel {
  title: string;
  type: string;
  datasource?: { type: string; uid: string };
  targets?: { expr: string; refId: string }[];
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: string }[] };
}

const dashboards = (): { file: string; d: Dashboard }[] =>
  readdirSync(DASHBOARDS)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, d: JSON.parse(readFileSync(join(DASHBOARDS, file), 'utf8')) as Dashboard }));

const queryPanels = (panels: readonly Panel[]): Panel[] => panels.flatMap((p) => [...(p.type === 'row' ? [] : [p]), ...queryPanels(p.panels ?? [])]);

describe('deploy/grafana dashboards', () => {
  test('one dashboard per context plus the platform, unique uids, each on its Prometheus data source variable', () => {
    const all = dashboards();
    assert.deepEqual(all.map((x) => x.file), ['pin-identity.json', 'pin-messenger.json', 'pin-notifications.json', 'pin-platform.json', 'pin-user-activity.json']);
    assert.equal(new Set(all.map((x) => x.d.uid)).size, all.length);
    for (const { file, d } of all) {
      assert.ok(d.templating.list.some((v) => v.name === 'datasource' && v.type === 'datasource' && v.query === 'prometheus'), `${file}: datasource variable`);
      for (const p of queryPanels(d.panels)) {
        assert.deepEqual(p.datasource, { type: 'prometheus', uid: '${datasource}' }, `${file} "${p.title}": data source`);
        assert.ok((p.targets ?? []).length > 0, `${file} "${p.title}": has a query`);
      }
    }
  });

  test('the provisioning file is what Grafana reads: a file provider pointing at a dashboards folder', () => {
    const doc = parse(readFileSync(join(ROOT, 'deploy/grafana/provisioning/dashboards.yml'), 'utf8')) as {
      apiVersion: number;
      providers: { name: string; type: string; options: { path: string } }[];
    };
    assert.equal(doc.apiVersion, 1);
    assert.equal(doc.providers.length, 1);
    assert.equal(doc.providers[0]!.type, 'file');
    assert.match(doc.providers[0]!.options.path, /^\/.+/);
  });

  test("every panel's PromQL parses (promtool, as recording rules) and names only metrics the running service exports", async () => {
    const exprs = dashboards().flatMap(({ file, d }) =>
      queryPanels(d.panels).flatMap((p) => (p.targets ?? []).map((t) => ({ where: `${file} "${p.title}" ${t.refId}`, expr: t.expr }))),
    );
    assert.ok(exprs.length > 50, `${exprs.length} queries`);
    const dir = mkdtempSync(join(tmpdir(), 'grafana-promql-'));
    try {
      const rules = { groups: [{ name: 'dashboards', rules: exprs.map((e, i) => ({ record: `dashboard:query_${i}`, expr: e.expr })) }] };
      writeFileSync(join(dir, 'dashboards.rules.yml'), stringify(rules));
      const res = promtool(['check', 'rules', 'dashboards.rules.yml'], dir);
      assert.equal(res.status, 0, res.output);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const exported = await exportedMetricNames();
    const missing = exprs.flatMap((e) => metricNames(e.expr).filter((m) => !exported.has(m)).map((m) => `${e.where}: ${m}`));
    assert.deepEqual(missing, []);
  });
});
