import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { CloserConfigError, createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../src/modules/user-activity/closer/activity-closer.ts';

test('closer settings default to the seed: threshold 12 min, polling 60 s, batch 500, max run 300 s', () => {
  const config = loadConfig({});
  assert.equal(config.USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES, 12);
  assert.equal(config.USER_ACTIVITY_CLOSER_POLLING_INTERVAL_SECONDS, 60);
  assert.equal(config.USER_ACTIVITY_CLOSER_BATCH_SIZE, 500);
  assert.equal(config.USER_ACTIVITY_CLOSER_MAX_RUN_DURATION_SECONDS, 300);
  assert.equal(config.USER_ACTIVITY_RETENTION_MONTHS, 12);
});

test('start fails fast naming every bad closer setting: threshold outside [10, 15] min, BatchSize ≤ 0', () => {
  for (const [name, value] of [
    ['USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES', '9'],
    ['USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES', '16'],
    ['USER_ACTIVITY_CLOSER_BATCH_SIZE', '0'],
    ['USER_ACTIVITY_CLOSER_MAX_RUN_DURATION_SECONDS', '0'],
  ] as const) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith(`${name}:`)),
      `${name}=${value}`,
    );
  }
  assert.equal(loadConfig({ USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES: '10' }).USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES, 10);
  assert.equal(loadConfig({ USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES: '15' }).USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES, 15);
});

test('the closer itself refuses invalid options, whoever builds it', () => {
  assert.throws(
    () =>
      createActivityCloser({
        db: null as never, // never reached: validation comes first
        registry: new Registry(),
        settings: { ...DEFAULT_CLOSER_SETTINGS, USER_ACTIVITY_INACTIVITY_THRESHOLD_MINUTES: 5 },
      }),
    CloserConfigError,
  );
});
