import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../../support/db.ts';
import { Gauge, Registry } from '../../../../src/platform/observability/metrics.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { consumerMetrics } from '../../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../../src/platform/events/consumer-runner.ts';
import { USER_SYNC_CONSUMER, userSyncConsumer } from '../../../../src/modules/messenger/user-replica/user-sync.consumer.ts';
import { createUserSyncMetrics } from '../../../../src/modules/messenger/user-replica/metrics.ts';
import { incomingFrom, nextPhone, userUpserted } from '../support/user-sync.ts';
import { metricValue } from '../../../support/metrics.ts';
import { waitFor } from '../../../support/wait.ts';
import { removeFromMediaSessions } from '../../../../src/modules/messenger/calls/deactivation.ts';
import { messengerPush } from '../support/push.ts';

/**
 * Seed 002's two timing metrics by value, through the real consumer runner on a real database:
 * messenger_user_sync_consume_duration_ms (one observation per applied event, within the time the
 * handler took) and messenger_user_sync_lag_seconds (0 when caught up; behind, the age of the last
 * applied event plus the time since). "Behind" is the runner's own consumer_lag gauge above 0, set
 * here as its broker poll sets it (a stuck partition on a real broker is the fault suite's).
 */

const TOPIC = 'pin.identity.users.v1';
const database = await createTestDatabase();
const registry = new Registry();
const definition = userSyncConsumer({
  clock: new ManualClock('2026-03-01T10:00:00Z'),
  log: createLogger('silent'),
  metrics: createUserSyncMetrics(registry, USER_SYNC_CONSUMER),
  phoneRegion: 'RU',
  partitionsConcurrently: 1,
  leaveMediaSessions: removeFromMediaSessions,
  push: messengerPush(),
});
const runner = consumerMetrics(registry);
const processor = createMessageProcessor(resolveConsumer(definition), {
  db: database.db,
  log: createLogger('silent'),
  metrics: runner,
  publish: async () => {},
});

const incoming = incomingFrom(TOPIC);
const AGE_S = 600;
const HOLD_MS = 200;

test('consume duration: one observation per applied event, their sum at least the time the handler was held and at most the time it took', async () => {
  const group = [1, 2, 3].map(() => incoming(userUpserted(newId(), { version: 1, phone: nextPhone() })));
  // The replica table is locked against writes, so the handler is held a measured while before it can write.
  const holder = await database.pool.connect();
  await holder.query('begin; lock table messenger.users in exclusive mode');
  const started = performance.now();
  const processed = processor.processBatch(group);
  await waitFor('the handler waits for the lock', async () => (await database.pool.query(`select 1 from pg_locks where not granted and relation = 'messenger.users'::regclass`)).rowCount! > 0);
  const blockedAt = performance.now();
  await delay(HOLD_MS);
  await holder.query('commit');
  const heldMs = performance.now() - blockedAt;
  holder.release();
  const result = await processed;
  const tookMs = performance.now() - started;
  assert.equal(result.error, undefined);
  const count = await metricValue(registry, 'messenger_user_sync_consume_duration_ms', {}, 'messenger_user_sync_consume_duration_ms_count');
  const sum = await metricValue(registry, 'messenger_user_sync_consume_duration_ms', {}, 'messenger_user_sync_consume_duration_ms_sum');
  assert.equal(count, 3);
  assert.ok(sum >= heldMs && sum <= tookMs, `${sum} ms observed; held ${heldMs} ms, took ${tookMs} ms`);
});

test(`user sync lag: 0 while caught up; behind, the applied event's age (${AGE_S} s) plus the time since it was applied`, async () => {
  const before = Date.now();
  const result = await processor.processBatch([incoming(userUpserted(newId(), { version: 1, phone: nextPhone(), occurredAt: new Date(before - AGE_S * 1000) }))]);
  assert.equal(result.error, undefined);
  const lag = () => metricValue(registry, 'messenger_user_sync_lag_seconds');
  assert.equal(await lag(), 0, 'caught up: nothing is late');

  (registry.getSingleMetric('consumer_lag') as Gauge).set({ consumer: USER_SYNC_CONSUMER, topic: TOPIC, partition: '0' }, 5);
  const seconds = await lag();
  const elapsedS = (Date.now() - before) / 1000;
  assert.ok(seconds >= AGE_S && seconds <= AGE_S + elapsedS, `lag ${seconds} s, expected ${AGE_S} s to ${AGE_S + elapsedS} s`);
});
