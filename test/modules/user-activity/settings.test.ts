import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { CloserConfigError, createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../src/modules/user-activity/closer/activity-closer.ts';

test('closer settings default to the seed: threshold 12 min, polling 60 s, batch 500, max run 300 s', () => {
  const config = loadConfig({});
  assert.equal(config.USER_ACTIVITY_INACTIVITY_THRESHOLD, 12 * 60_000);
  assert.equal(config.USER_ACTIVITY_CLOSER_POLLING_INTERVAL, 60_000);
  assert.equal(config.USER_ACTIVITY_CLOSER_BATCH_SIZE, 500);
  assert.equal(config.USER_ACTIVITY_CLOSER_MAX_RUN_DURATION, 300_000);
  assert.equal(config.USER_ACTIVITY_RETENTION_MONTHS, 12);
});

test('start fails fast naming every bad closer setting: threshold outside [10, 15] min, BatchSize ≤ 0', () => {
  for (const [name, value] of [
    ['USER_ACTIVITY_INACTIVITY_THRESHOLD', '9m'],
    ['USER_ACTIVITY_INACTIVITY_THRESHOLD', '16m'],
    ['USER_ACTIVITY_CLOSER_BATCH_SIZE', '0'],
    ['USER_ACTIVITY_CLOSER_MAX_RUN_DURATION', '0s'],
  ] as const) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith(`${name}:`)),
      `${name}=${value}`,
    );
  }
  assert.equal(loadConfig({ USER_ACTIVITY_INACTIVITY_THRESHOLD: '10m' }).USER_ACTIVITY_INACTIVITY_THRESHOLD, 10 * 60_000);
  assert.equal(loadConfig({ USER_ACTIVITY_INACTIVITY_THRESHOLD: '15m' }).USER_ACTIVITY_INACTIVITY_THRESHOLD, 15 * 60_000);
});

test('the closer itself refuses invalid options, whoever builds it', () => {
  assert.throws(
    () =>
      createActivityCloser({
        db: null as never, // never reached: validation comes first
        registry: new Registry(),
        settings: { ...DEFAULT_CLOSER_SETTINGS, USER_ACTIVITY_INACTIVITY_THRESHOLD: 5 * 60_000 },
      }),
    CloserConfigError,
  );
});
