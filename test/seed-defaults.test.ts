import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from './support/app.ts';
import { logCapture } from './support/logs.ts';
import { insertOutbox, uid } from './modules/messenger/support/dispatch.ts';
import { ManualClock } from '../src/platform/time.ts';
import { dispatchSettingsOf, PUSH_DEFAULTS } from '../src/platform/push/index.ts';
import { identitySettingsFrom } from '../src/modules/identity/context.ts';
import { MESSENGER_DEFAULTS } from '../src/modules/messenger/defaults.ts';
import { userSyncConsumer } from '../src/modules/messenger/user-replica/user-sync.consumer.ts';
import { resolveConsumer } from '../src/platform/events/consumer-definition.ts';

/**
 * The defaults each seed lists, read from what the service really runs: the settings schema's
 * defaults (loadConfig with nothing set), mapped by the same functions the app maps them with, and
 * the jobs the app registers. The expected values are the seeds' own (seed 000
 * RealtimeDispatchOptions, seed 001 ActivityCloserOptions, seed 002's consumer backoff, seed 003
 * AccessFanOutJob, seed 004 NotificationRetryWorker), written
 * here once; the other tests of these jobs build their settings from the same configuration, so a
 * changed default fails here, not silently there.
 */

const clock = new ManualClock('2026-03-01T10:00:00Z');
const { app, config, database } = await buildTestApp({}, { logDestination: logCapture().stream, clock });
const jobs = await app.platform.runner.list();
const job = (name: string) => {
  const found = jobs.find((j) => j.name === name);
  assert.ok(found, `the app registers ${name}`);
  return { every: found.schedule.every, singleRunner: found.singleRunner, lockKey: found.lockKey, lockTtlMs: found.lockTtlMs };
};

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

test('seed 000 RealtimeDispatchJob: PollingInterval 1 s, single runner on job:scheduled:messenger-realtime-dispatch (LockTtl 30 s), BatchSize 200, MaxRunDuration 5 s, MaxAttempts 8, backoff 2 s / 2.0 / 2 min + jitter', () => {
  // The LockTtl is no setting: the runner derives it from MaxRunDuration, and this is the one it holds.
  assert.deepEqual(job('messenger-realtime-dispatch'), { every: 1 * SECOND, singleRunner: true, lockKey: 'job:scheduled:messenger-realtime-dispatch', lockTtlMs: 30 * SECOND });
  const s = dispatchSettingsOf(config, PUSH_DEFAULTS);
  assert.deepEqual(
    { batchSize: s.batchSize, maxRunMs: s.maxRunMs, maxAttempts: s.maxAttempts, baseMs: s.backoff.baseMs, factor: s.backoff.factor, capMs: s.backoff.capMs },
    { batchSize: 200, maxRunMs: 5 * SECOND, maxAttempts: 8, baseMs: 2 * SECOND, factor: 2, capMs: 2 * MINUTE },
  );
  assert.ok(s.backoff.jitter > 0, 'the retry delay carries jitter');
});

test('seed 000 RetentionDone 24 h: the retention job the app runs deletes a Done row done 24 h and a minute ago and keeps one done 23 h 59 min ago', async () => {
  const doneAgo = (ms: number) =>
    insertOutbox(database.pool, { kind: 'ContactRequestReceived', targetKind: 'User', targetUserId: uid(), refId: uid(), status: 'Done', nextAttemptAt: new Date(clock.now().getTime() - ms) });
  const [expired, kept] = [await doneAgo(24 * HOUR + MINUTE), await doneAgo(24 * HOUR - MINUTE)];
  assert.equal((await app.platform.runner.runNow('messenger-realtime-retention')).outcome, 'success');
  const { rows } = await database.pool.query<{ id: string }>('select id from push.realtime_outbox where id = any($1)', [[expired, kept]]);
  assert.deepEqual(rows.map((r) => r.id), [kept]);
});

test('seed 001 ActivityCloserJob: PollingInterval 1 min on every replica (rows taken with SKIP LOCKED, no lock), BatchSize 500, MaxRunDuration 5 min, InactivityThreshold within 10..15 min', () => {
  assert.deepEqual(job('activity-closer'), { every: 1 * MINUTE, singleRunner: false, lockKey: null, lockTtlMs: null });
  assert.deepEqual(
    { batchSize: config.USER_ACTIVITY_CLOSER_BATCH_SIZE, maxRunMs: config.USER_ACTIVITY_CLOSER_MAX_RUN_DURATION },
    { batchSize: 500, maxRunMs: 5 * MINUTE },
  );
  const threshold = config.USER_ACTIVITY_INACTIVITY_THRESHOLD;
  assert.ok(threshold >= 10 * MINUTE && threshold <= 15 * MINUTE, `InactivityThreshold ${threshold} ms`);
});

test('seed 002 MessengerUserUpsertedConsumer: infrastructure failures are retried without end, 1 s doubling to 60 s', () => {
  // The definition the messenger registers, resolved as the consumer runner resolves it.
  const consumer = resolveConsumer(userSyncConsumer({ partitionsConcurrently: MESSENGER_DEFAULTS.userSyncPartitionsConcurrently } as never));
  assert.deepEqual({ baseMs: consumer.backoff.baseMs, factor: consumer.backoff.factor, capMs: consumer.backoff.capMs }, { baseMs: 1 * SECOND, factor: 2, capMs: 60 * SECOND });
});

test('seed 003 AccessFanOutJob: PollingInterval 5 s on every replica (tasks taken with SKIP LOCKED, no lock), BatchSize 500, MaxLeaseDuration 5 min', () => {
  assert.deepEqual(job('identity-access-fanout'), { every: 5 * SECOND, singleRunner: false, lockKey: null, lockTtlMs: null });
  const { fanOut } = identitySettingsFrom(config);
  assert.deepEqual({ batchSize: fanOut.batchSize, maxLeaseMs: fanOut.maxLeaseMs }, { batchSize: 500, maxLeaseMs: 5 * MINUTE });
});

test('seed 004 NotificationRetryWorker: a cycle every minute under the distributed lock notifications:retry-worker', () => {
  assert.deepEqual(job('notifications-retry-worker'), { every: 1 * MINUTE, singleRunner: true, lockKey: 'notifications:retry-worker', lockTtlMs: 102 * SECOND });
  // (the lock outlives a run: twice its 50 s limit plus the 2 s margin, the kernel's rule for a long run)
});
