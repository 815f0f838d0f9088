import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from '../src/platform/observability/index.ts';
import { logCapture } from './support/logs.ts';
import { metricValue } from './support/metrics.ts';
import { waitFor } from './support/wait.ts';

test('the metric reader fails on an unknown metric, label or series instead of reading 0', async () => {
  const registry = new Registry();
  const sent = new Counter({ name: 'demo_sent_total', help: 'h', labelNames: ['channel'], registers: [registry] });
  const took = new Histogram({ name: 'demo_duration_seconds', help: 'h', labelNames: ['channel'], buckets: [1], registers: [registry] });
  sent.inc({ channel: 'Sms' }, 2);
  took.observe({ channel: 'Sms' }, 0.5);
  assert.equal(await metricValue(registry, 'demo_sent_total', { channel: 'Sms' }), 2);
  assert.equal(await metricValue(registry, 'demo_sent_total', { channel: 'Email' }), 0, 'a label set not seen yet reads 0');
  assert.equal(await metricValue(registry, 'demo_duration_seconds', { channel: 'Sms' }, 'demo_duration_seconds_count'), 1);
  await assert.rejects(metricValue(registry, 'demo_snet_total'), /no metric named 'demo_snet_total'/);
  await assert.rejects(metricValue(registry, 'demo_sent_total', { chanel: 'Sms' }), /has no label 'chanel'/);
  await assert.rejects(metricValue(registry, 'demo_sent_total', {}, 'demo_sent_count'), /has no series 'demo_sent_count'/);
  await assert.rejects(metricValue(registry, 'demo_duration_seconds'), /a histogram: pick demo_duration_seconds_count/);
});

test('waitFor resolves once the check holds and names what it waited for when it does not', async () => {
  let n = 0;
  await waitFor('three polls', () => ++n >= 3);
  assert.equal(n, 3);
  await assert.rejects(waitFor('the impossible', () => false, 30), /timed out waiting for: the impossible/);
});

test('logCapture keeps every JSON line at and above its level', () => {
  const logs = logCapture('info');
  logs.log.debug('hidden');
  logs.log.info({ a: 1 }, 'shown');
  assert.deepEqual(logs.lines().map((l) => [l.msg, l.a]), [['shown', 1]]);
  assert.match(logs.text(), /"msg":"shown"/);
});
