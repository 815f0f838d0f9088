import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { ManualClock } from '../../../../src/platform/time.ts';
import { createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../../src/modules/user-activity/closer/activity-closer.ts';
import { metricValue } from '../../../support/metrics.ts';
import { createProxiedDatabase } from '../../../support/proxied-db.ts';
import { captureLog, closerContext, minutesBefore, seedSession, T0 } from '../support.ts';

/** Seed 001's "errors_total growing" alert must see a closer that cannot reach PostgreSQL at all, not only a failing row. */
test('a closer run that fails on the database raises activity_closer_errors_total; the rows close once it is back', async () => {
  const t = await createProxiedDatabase();
  const clock = new ManualClock(T0);
  const registry = new Registry();
  const closer = createActivityCloser({ db: t.db, registry, settings: DEFAULT_CLOSER_SETTINGS });
  const sessionId = await seedSession(t.direct.pool, { createdAt: minutesBefore(40), lastActivityAt: minutesBefore(13) });
  const { log } = captureLog();

  t.proxy.refuse();
  await assert.rejects(closer.runOnce(closerContext(clock, log)));
  assert.equal(await metricValue(registry, 'activity_closer_errors_total', { phase: 'hanging_views' }), 1);

  t.proxy.restore();
  const counts = await closer.runOnce(closerContext(clock, log));
  assert.equal(counts.closedSessions, 1);
  assert.equal(await metricValue(registry, 'activity_closer_errors_total'), 1, 'a healthy run adds no error');
  const { rows } = await t.direct.pool.query<{ status: string }>('select status from user_activity.sessions where id = $1', [sessionId]);
  assert.equal(rows[0]?.status, 'Inactive');
});
