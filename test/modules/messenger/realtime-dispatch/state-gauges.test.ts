import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { requeueQuarantined } from '../../../../src/platform/push/quarantine-sql.ts';
import { realtimeStateGauges } from '../../../../src/platform/push/metrics.ts';
import { createTestDatabase } from '../../../support/db.ts';
import { metricValue } from '../../../support/metrics.ts';
import { insertOutbox, T0 } from '../support/dispatch.ts';
import { messengerApp } from '../support/app.ts';

/** The realtime outbox's current state as on-call's alerts read it: read from the table, not counted by a process. */
describe('realtime outbox state gauges', () => {
  test('messenger_realtime_quarantined counts the Quarantined rows now, also in a registry that never saw them quarantined (a restart)', async () => {
    const { pool, db } = await createTestDatabase();
    const registry = new Registry();
    realtimeStateGauges(registry, db, new ManualClock(T0));
    assert.equal(await metricValue(registry, 'messenger_realtime_quarantined'), 0);

    const rows = [];
    for (let i = 0; i < 3; i++) rows.push(await insertOutbox(pool, { kind: 'MessageReceived', chatId: newId(), messageId: newId(), status: 'Quarantined' }));
    await insertOutbox(pool, { kind: 'MessageReceived', chatId: newId(), messageId: newId(), status: 'Done' });
    assert.equal(await metricValue(registry, 'messenger_realtime_quarantined'), 3);

    // The runbook's requeue brings it back to 0: what "see it worked" looks at.
    assert.equal(await requeueQuarantined(db, rows.slice(0, 2), T0), 2);
    assert.equal(await metricValue(registry, 'messenger_realtime_quarantined'), 1);
  });

  test('messenger_realtime_pending on /metrics is the number of Pending rows, those waiting for a retry included; Done and Quarantined rows are not', async () => {
    const m = await messengerApp();
    const scrape = async () => {
      const res = await m.app.inject({ method: 'GET', url: '/metrics' });
      assert.equal(res.statusCode, 200);
      const line = res.body.split('\n').find((l) => l.startsWith('messenger_realtime_pending '));
      assert.ok(line, 'messenger_realtime_pending is exported');
      return Number(line.split(' ')[1]);
    };
    assert.equal(await scrape(), 0);
    const pending = [];
    for (let i = 0; i < 3; i++) pending.push(await insertOutbox(m.pool, { kind: 'MessageReceived', chatId: newId(), messageId: newId() }));
    pending.push(await insertOutbox(m.pool, { kind: 'MessageReceived', chatId: newId(), messageId: newId(), attempts: 2, nextAttemptAt: new Date(T0.getTime() + 60_000) }));
    await insertOutbox(m.pool, { kind: 'MessageReceived', chatId: newId(), messageId: newId(), status: 'Done' });
    await insertOutbox(m.pool, { kind: 'MessageReceived', chatId: newId(), messageId: newId(), status: 'Quarantined' });
    assert.equal(await scrape(), 4);
    await m.pool.query(`update push.realtime_outbox set status = 'Done' where id = any($1::uuid[])`, [pending.slice(0, 3)]);
    assert.equal(await scrape(), 1);
  });

  test('messenger_realtime_oldest_pending_age_seconds is now − CreatedAt of the oldest Pending row, 0 when none is Pending', async () => {
    const { pool, db } = await createTestDatabase();
    const registry = new Registry();
    const clock = new ManualClock(T0);
    realtimeStateGauges(registry, db, clock);
    await insertOutbox(pool, { kind: 'MessageReceived', chatId: newId(), messageId: newId(), status: 'Done', createdAt: new Date(T0.getTime() - 3600_000) });
    assert.equal(await metricValue(registry, 'messenger_realtime_oldest_pending_age_seconds'), 0, 'Done rows do not age it');

    await insertOutbox(pool, { kind: 'MessageReceived', chatId: newId(), messageId: newId(), createdAt: new Date(T0.getTime() - 30_000) });
    await insertOutbox(pool, { kind: 'MessageReceived', chatId: newId(), messageId: newId(), createdAt: new Date(T0.getTime() - 5_000) });
    assert.equal(await metricValue(registry, 'messenger_realtime_oldest_pending_age_seconds'), 30);

    // No run needed: the age grows with the clock while nothing pushes.
    clock.advance(90_000);
    assert.equal(await metricValue(registry, 'messenger_realtime_oldest_pending_age_seconds'), 120);
  });
});
