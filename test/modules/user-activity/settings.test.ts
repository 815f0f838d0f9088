import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { MINUTE_MS } from '../../../src/platform/time.ts';
import { createActivityCloser, DEFAULT_CLOSER_SETTINGS } from '../../../src/modules/user-activity/closer/activity-closer.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';

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
    // The setting reaches code in milliseconds: one millisecond outside either bound is refused.
    ['USER_ACTIVITY_INACTIVITY_THRESHOLD', '599999ms'],
    ['USER_ACTIVITY_INACTIVITY_THRESHOLD', '900001ms'],
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

test('the closer runs on the seed\'s defaults: polling 1 min, batch 500, max run 5 min', () => {
  const closer = createActivityCloser({ db: null as never, registry: new Registry(), settings: DEFAULT_CLOSER_SETTINGS });
  assert.equal(closer.every, MINUTE_MS);
  assert.equal(closer.maxRunMs, 5 * MINUTE_MS);
});

test('every bad closer setting is reported at once and start fails (validated once, by loadConfig)', () => {
  const bad = {
    USER_ACTIVITY_CLOSER_BATCH_SIZE: '0',
    USER_ACTIVITY_INACTIVITY_THRESHOLD: '1m',
    USER_ACTIVITY_CLOSER_MAX_RUN_DURATION: '0',
  };
  assert.throws(
    () => loadConfig(bad),
    (err: unknown) => err instanceof ConfigError && Object.keys(bad).every((name) => err.problems.some((p) => p.startsWith(`${name}:`))),
  );
});
