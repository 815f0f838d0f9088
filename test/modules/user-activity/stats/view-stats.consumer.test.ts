import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../../support/app.ts';
import { createTestKafka } from '../../../support/kafka.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { TOPICS } from '../../../../src/event-topics.ts';
import userActivity from '../../../../src/modules/user-activity/index.ts';
import { MAX_VIEW_DURATION_SECONDS, VIEW_STATS_CONSUMER } from '../../../../src/modules/user-activity/stats/view-stats.ts';
import { countWhere, MIN, T0 } from '../support.ts';
import { metricValue } from '../../../support/metrics.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * PropertyObjectViewEnded → stats, end to end on the real broker: the closer's events go out through
 * the outbox publisher and come back to this module's consumer; a redelivered event counts once.
 */

const k = await createTestKafka();
const clock = new ManualClock(T0);
const { app, database } = await buildTestApp(
  { KAFKA_BROKERS: k.brokers.join(','), KAFKA_TOPIC_PREFIX: k.prefix, JOBS_ENABLED: 'true', OUTBOX_POLLING_INTERVAL: '200ms' },
  { modules: [userActivity], clock },
);
await app.platform.startBackground();
const pool = database.pool;
const viewTopic = k.topic(TOPICS.propertyObjectViewEnded);

const stats = async (propertyObjectId: string) =>
  (await app.inject({ method: 'GET', url: `/api/user-activity/property-objects/${propertyObjectId}/stats` })).json() as {
    viewsCount: number;
    totalDurationSeconds: number;
  };
const inboxed = (messageId: string) =>
  countWhere(pool, `select count(*) as n from platform.inbox where idempotency_key = $1`, [`${VIEW_STATS_CONSUMER}:${messageId}`]);

/** A raw PropertyObjectViewEnded message with any payload. */
const viewEnded = (messageId: string, key: string, payload: Record<string, unknown>) => ({
  key,
  value: JSON.stringify(payload),
  headers: {
    'message-id': messageId,
    'event-type': 'PropertyObjectViewEndedKafkaEvent',
    'contract-version': '1',
    'aggregate-type': 'PropertyObjectView',
    'aggregate-id': key,
    'occurred-at': T0.toISOString(),
  },
});

describe('view stats consumer (real Kafka)', () => {
  // Background work stops before the file's database is dropped (file-level hooks run later).
  after(() => app.close());

  test('closed views feed the stats once, even when their event is redelivered or re-announced under a new message id', async () => {
    const propertyObjectId = newId();
    const session = (
      await app.inject({ method: 'POST', url: '/api/user-activity/sessions', payload: { anonymousId: 'stats-device-0001', device: {} } })
    ).json() as { id: string; deviceSecret: string };
    const secret = { 'x-device-secret': session.deviceSecret };
    const openView = async () =>
      (
        await app.inject({
          method: 'POST',
          url: '/api/user-activity/property-object-views',
          headers: secret,
          payload: { sessionId: session.id, propertyObjectId, viewSource: 'Catalog' },
        })
      ).json() as { id: string };
    await openView();
    clock.advance(2 * MIN);
    const second = await openView();
    clock.advance(3 * MIN);
    await app.inject({ method: 'PUT', url: `/api/user-activity/property-object-views/${second.id}/heartbeat`, headers: secret }); // 180 s
    clock.advance(13 * MIN);

    const run = await app.platform.runner.runNow('activity-closer');
    assert.equal(run.counts.closedViews, 2);

    await waitFor('both views counted', async () => (await stats(propertyObjectId)).viewsCount === 2);
    assert.deepEqual(await stats(propertyObjectId), { propertyObjectId, viewsCount: 2, totalDurationSeconds: 180 });

    // Redelivery: the very same Kafka message again (same message-id) …
    const [original] = (await k.readTopic(viewTopic, { atLeast: 2 })).filter((m) => m.key === second.id);
    assert.ok(original);
    await k.produce(viewTopic, [{ key: original.key, value: original.value, headers: original.headers }]);
    // … and the same view announced again under a new message id (a re-enqueue): deduped by PropertyObjectViewId.
    const reannouncedId = newId();
    await k.produce(viewTopic, [{ key: original.key, value: original.value, headers: { ...original.headers, 'message-id': reannouncedId } }]);

    await waitFor('re-announced message handled', async () => (await inboxed(reannouncedId)) === 1);
    await waitFor(
      'redelivered message seen as duplicate',
      async () => (await metricValue(app.platform.registry, 'consumer_messages_total', { consumer: VIEW_STATS_CONSUMER, outcome: 'duplicate' })) >= 1,
    );
    assert.deepEqual(await stats(propertyObjectId), { propertyObjectId, viewsCount: 2, totalDurationSeconds: 180 });
  });

  test('a view-ended event the stats cannot use is dead-lettered with a stable code, and the partition moves on', async () => {
    const badId = newId();
    await k.produce(viewTopic, [
      {
        key: badId,
        value: JSON.stringify({ PropertyObjectViewId: badId, DurationSeconds: -5 }),
        headers: {
          'message-id': badId,
          'event-type': 'PropertyObjectViewEndedKafkaEvent',
          'contract-version': '1',
          'aggregate-type': 'PropertyObjectView',
          'aggregate-id': badId,
          'occurred-at': T0.toISOString(),
        },
      },
    ]);
    const dlq = await k.readTopic(`${viewTopic}.dlq`, { atLeast: 1 });
    assert.equal(dlq.length, 1);
    assert.equal(dlq[0]!.headers['dlq-code'], 'USER_ACTIVITY_VIEW_ENDED_INVALID_PAYLOAD');
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.counted_property_object_views where property_object_view_id = $1`, [badId]), 0);
  });

  test('a duration no view can have (beyond the closer\'s integer column) is poison at validation, before it can overflow the sum; the next event of the partition counts', async () => {
    const propertyObjectId = newId();
    const [hugeView, nextView] = [newId(), newId()];
    const key = newId(); // one key: the same partition, so "the next one counts" shows the partition moved on
    await k.produce(viewTopic, [
      // 1e20: an integer to JSON and to the old schema, far beyond bigint.
      viewEnded(hugeView, key, { PropertyObjectViewId: hugeView, PropertyObjectId: propertyObjectId, DurationSeconds: 1e20 }),
      viewEnded(nextView, key, { PropertyObjectViewId: nextView, PropertyObjectId: propertyObjectId, DurationSeconds: MAX_VIEW_DURATION_SECONDS }),
    ]);

    await waitFor('the valid view after it counted', async () => (await stats(propertyObjectId)).viewsCount === 1);
    assert.deepEqual(await stats(propertyObjectId), { propertyObjectId, viewsCount: 1, totalDurationSeconds: MAX_VIEW_DURATION_SECONDS });
    const letter = (await k.readTopic(`${viewTopic}.dlq`, { atLeast: 2 })).find((m) => m.headers['message-id'] === hugeView);
    assert.ok(letter, 'the huge-duration event is dead-lettered');
    assert.equal(letter.headers['dlq-code'], 'USER_ACTIVITY_VIEW_ENDED_INVALID_PAYLOAD');
    assert.match(letter.headers['dlq-reason']!, /DurationSeconds/);
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.counted_property_object_views where property_object_view_id = $1`, [hugeView]), 0);
  });
});
