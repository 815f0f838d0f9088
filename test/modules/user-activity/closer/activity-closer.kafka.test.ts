import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../../support/app.ts';
import { createTestKafka, type ReadMessage } from '../../../support/kafka.ts';
import { buildApp } from '../../../../src/app.ts';
import { createPool } from '../../../../src/platform/db/index.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { TOPICS } from '../../../../src/event-topics.ts';
import userActivity from '../../../../src/modules/user-activity/index.ts';
import { countWhere, minutesBefore, seedSession, seedStaleSessions, seedView, T0 } from '../support.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * Two replicas (two apps, one database) run ActivityCloserJob at the same time over 2,000 stale
 * sessions with 3 views each; the outbox publisher sends the events to the real broker and the
 * stats consumer reads the view events back.
 */

const k = await createTestKafka();
const clock = new ManualClock(T0);
const env = {
  KAFKA_BROKERS: k.brokers.join(','),
  KAFKA_TOPIC_PREFIX: k.prefix,
  JOBS_ENABLED: 'true',
  OUTBOX_POLLING_INTERVAL: '200ms',
  USER_ACTIVITY_CLOSER_BATCH_SIZE: '100',
};
const first = await buildTestApp(env, { modules: [userActivity], clock });
const pool = first.database.pool;
const secondPool = createPool(first.database.url, 10);
const second = await buildApp(first.config, {
  pool: secondPool,
  databaseUrl: first.database.url,
  log: createLogger('warn'),
  modules: [userActivity],
  clock,
});

const SESSIONS = 2000;
const VIEWS_PER_SESSION = 3;

describe('ActivityCloserJob with two replicas, outbox and Kafka', () => {
  after(async () => {
    await second.close();
    await first.app.close();
    await secondPool.end();
  });

  test('2,000 stale sessions × 3 views: every row closed once, one outbox event and one Kafka message per aggregate, payloads match the contract', async () => {
    // One session shaped by hand for the field-by-field check; the rest in bulk.
    const userId = newId();
    const known = await seedSession(pool, { anonymousId: 'known-device', userId, createdAt: minutesBefore(50), lastActivityAt: minutesBefore(13) });
    const knownViews = [
      await seedView(pool, { sessionId: known, viewSource: 'Map', filterSnapshot: { rooms: [1, 2], district: 'Центральный' }, createdAt: minutesBefore(45), lastActivityAt: minutesBefore(20) }),
      await seedView(pool, { sessionId: known, viewSource: 'Catalog', createdAt: minutesBefore(30), lastActivityAt: minutesBefore(14) }),
      await seedView(pool, { sessionId: known, viewSource: 'Search', createdAt: minutesBefore(25), lastActivityAt: minutesBefore(13) }),
    ];
    await seedStaleSessions(pool, SESSIONS - 1, VIEWS_PER_SESSION, minutesBefore(13));
    await Promise.all([first.app.platform.startBackground(), second.platform.startBackground()]);

    const runs = await Promise.all([
      first.app.platform.runner.runNow('activity-closer'),
      second.platform.runner.runNow('activity-closer'),
    ]);

    assert.deepEqual(runs.map((r) => r.outcome), ['success', 'success']);
    assert.equal(runs[0].counts.closedSessions! + runs[1].counts.closedSessions!, SESSIONS, 'each session closed by exactly one replica');
    assert.equal(runs[0].counts.closedViews! + runs[1].counts.closedViews!, SESSIONS * VIEWS_PER_SESSION);
    assert.ok(runs.every((r) => r.counts.closedSessions! > 0), 'both replicas shared the work');
    const stillActive = await countWhere(
      pool,
      `select (select count(*) from user_activity.sessions where status = 'Active') + (select count(*) from user_activity.property_object_views where status = 'Active') as n`,
    );
    assert.equal(stillActive, 0);
    const aggregates = SESSIONS * (1 + VIEWS_PER_SESSION);
    assert.equal(await countWhere(pool, `select count(*) as n from platform.outbox`), aggregates);
    assert.equal(await countWhere(pool, `select count(distinct aggregate_id) as n from platform.outbox`), aggregates);

    await waitFor(
      'outbox drained to Kafka',
      async () => (await countWhere(pool, `select count(*) as n from platform.outbox where published_at is null`)) === 0,
      30_000,
    );
    const sessionMessages = await k.readTopic(k.topic(TOPICS.sessionEnded), { atLeast: SESSIONS });
    const viewMessages = await k.readTopic(k.topic(TOPICS.propertyObjectViewEnded), { atLeast: SESSIONS * VIEWS_PER_SESSION });
    assert.equal(sessionMessages.length, SESSIONS, 'one SessionEnded message per session');
    assert.equal(new Set(sessionMessages.map((m) => m.key)).size, SESSIONS);
    assert.equal(viewMessages.length, SESSIONS * VIEWS_PER_SESSION, 'one PropertyObjectViewEnded message per view');
    assert.equal(new Set(viewMessages.map((m) => m.key)).size, SESSIONS * VIEWS_PER_SESSION);

    // Field by field, against the rows as they were closed.
    const jobRunIds = runs.map((r) => r.jobRunId);
    const { rows: [s] } = await pool.query(`select * from user_activity.sessions where id = $1`, [known]);
    const sessionMessage = sessionMessages.find((m) => m.key === known)!;
    assertEnvelope(sessionMessage, 'SessionEndedKafkaEvent', 'Session', known, s.ended_at, jobRunIds);
    assert.deepEqual(JSON.parse(sessionMessage.value!.toString()), {
      SessionId: known,
      AnonymousId: 'known-device',
      UserId: userId,
      CreatedAt: minutesBefore(50).toISOString(),
      LastActivityAt: minutesBefore(13).toISOString(),
      DurationSeconds: 37 * 60,
    });
    const expectedViews = [
      { id: knownViews[0]!, source: 'Map', filter: { rooms: [1, 2], district: 'Центральный' }, created: 45, last: 20 },
      { id: knownViews[1]!, source: 'Catalog', filter: null, created: 30, last: 14 },
      { id: knownViews[2]!, source: 'Search', filter: null, created: 25, last: 13 },
    ];
    for (const v of expectedViews) {
      const { rows: [row] } = await pool.query(`select * from user_activity.property_object_views where id = $1`, [v.id]);
      const message = viewMessages.find((m) => m.key === v.id)!;
      assertEnvelope(message, 'PropertyObjectViewEndedKafkaEvent', 'PropertyObjectView', v.id, row.ended_at, jobRunIds);
      assert.deepEqual(JSON.parse(message.value!.toString()), {
        PropertyObjectViewId: v.id,
        PropertyObjectId: row.property_object_id,
        SessionId: known,
        AnonymousId: 'known-device',
        UserId: userId,
        ViewSource: v.source,
        ViewedAt: minutesBefore(v.created).toISOString(),
        LastActivityAt: minutesBefore(v.last).toISOString(),
        DurationSeconds: (v.created - v.last) * 60,
        FilterSnapshot: v.filter,
      });
    }
    for (const m of [...sessionMessages, ...viewMessages]) assert.doesNotMatch(m.value!.toString(), /IpAddress|UserAgent|198\.51\.100|Mozilla/);

    // The stats consumer (both replicas in one group) counts every view exactly once.
    await waitFor(
      'all views counted into the stats',
      async () => (await countWhere(pool, `select coalesce(sum(views_count), 0) as n from user_activity.property_object_view_stats`)) === SESSIONS * VIEWS_PER_SESSION,
      30_000,
    );
    assert.equal(await countWhere(pool, `select count(*) as n from user_activity.counted_property_object_views`), SESSIONS * VIEWS_PER_SESSION);
  });
});

function assertEnvelope(m: ReadMessage, eventType: string, aggregateType: string, id: string, endedAt: Date, jobRunIds: string[]) {
  assert.equal(m.headers['event-type'], eventType);
  assert.equal(m.headers['contract-version'], '1');
  assert.equal(m.headers['aggregate-type'], aggregateType);
  assert.equal(m.headers['aggregate-id'], id);
  assert.equal(m.headers['occurred-at'], endedAt.toISOString());
  assert.match(m.headers['message-id']!, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
  assert.ok(jobRunIds.includes(m.headers['correlation-id']!), 'correlation id is the closing run');
}
