import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config.ts';
import { buildApp } from '../../../src/app.ts';
import { createDb, createPool } from '../../../src/platform/db/index.ts';
import { setMetricsLogger } from '../../../src/platform/observability/index.ts';
import { enqueue } from '../../../src/platform/outbox/index.ts';
import { createTestDatabase } from '../../support/db.ts';
import { logCapture } from '../../support/logs.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';
import { startTcpProxy } from '../../support/tcp-proxy.ts';

/** Every database-backed gauge of the app: none of them may fail /metrics (it must answer while PostgreSQL is down). */
const DB_GAUGES = [
  'outbox_pending',
  'outbox_oldest_pending_age_seconds',
  'messenger_realtime_pending',
  'messenger_realtime_quarantined',
  'messenger_realtime_oldest_pending_age_seconds',
  'messenger_contact_search_pending_documents',
  'notifications_failed_backlog',
  'notifications_failed_oldest_due_age_seconds',
  'notifications_waiting',
  'notifications_waiting_oldest_age_seconds',
  'notifications_unconfirmed',
  'notifications_unsent',
  'identity_access_fanout_queue_backlog',
  'identity_access_fanout_tasks_failed',
  'identity_access_fanout_tasks_in_progress',
  'identity_access_fanout_oldest_backlog_age_seconds',
  'identity_access_events_unpublished',
  'user_activity_stuck_active_rows',
];

test('/metrics answers while PostgreSQL is unreachable: gauges keep their last values, staleness and failures show it', async () => {
  const database = await createTestDatabase();
  const target = new URL(database.url);
  const proxy = await startTcpProxy(Number(target.port), target.hostname);
  const proxied = new URL(database.url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  // The app reaches the database only through the proxy; the test writes rows directly.
  const pool = createPool(proxied.toString(), 5);
  const config = loadConfig({ LOG_LEVEL: 'warn', JOBS_ENABLED: 'false', PORT: '0' });
  const logs = logCapture('info');
  const app = await buildApp(config, { pool, databaseUrl: proxied.toString(), log: logs.log });
  const registry = app.platform.registry;
  setMetricsLogger(registry, logs.log);
  try {
    const addPending = (key: string) =>
      enqueue(createDb(database.pool), {
        topic: 'test.db-gauge',
        key,
        eventType: 'Probe',
        aggregateType: 'Probe',
        aggregateId: key,
        occurredAt: new Date(),
        payload: { Key: key },
      });
    const scrape = async () => {
      const res = await app.inject({ method: 'GET', url: '/metrics' });
      assert.equal(res.statusCode, 200, `/metrics answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
      return res.body;
    };
    const stale = (gauge: string) => metricValue(registry, 'metrics_db_gauge_stale_seconds', { gauge });
    const failures = (gauge: string) => metricValue(registry, 'metrics_db_gauge_failures_total', { gauge });
    const warnings = () => logs.lines().filter((l) => l.level === 40 && typeof l.gauge === 'string').length;

    await addPending('a');
    await scrape();
    assert.equal(await metricValue(registry, 'outbox_pending'), 1);
    for (const g of DB_GAUGES) assert.equal(await stale(g), 0, `${g} is fresh`);

    for (const fault of ['hang', 'refuse'] as const) {
      const failedBefore = new Map<string, number>();
      for (const g of DB_GAUGES) failedBefore.set(g, await failures(g));
      const warnedBefore = warnings();
      const pendingBefore = await metricValue(registry, 'outbox_pending');

      proxy[fault]();
      await addPending(`${fault}-1`); // written directly: the app cannot see it while cut off
      await scrape();
      await scrape();
      assert.equal(await metricValue(registry, 'outbox_pending'), pendingBefore, `${fault}: the last value is kept`);
      for (const g of DB_GAUGES) {
        assert.ok((await stale(g)) > 0, `${fault}: ${g} reports itself stale`);
        assert.ok((await failures(g)) > failedBefore.get(g)!, `${fault}: failures of ${g} rose`);
      }
      assert.equal(warnings() - warnedBefore, DB_GAUGES.length, `${fault}: one warning per gauge for the whole streak`);

      proxy.restore();
      await waitFor(
        `${fault}: fresh values after the database is back`,
        async () => {
          await scrape();
          for (const g of DB_GAUGES) if ((await stale(g)) !== 0) return false;
          return (await metricValue(registry, 'outbox_pending')) === pendingBefore + 1;
        },
        20_000,
      );
    }
  } finally {
    // A failed check must be reported, not hidden behind a close that waits for hung connections.
    proxy.restore();
    await app.close();
    await pool.end();
  }
});
