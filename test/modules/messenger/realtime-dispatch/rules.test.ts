import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelayMs, backoffScheduleMs, type Backoff } from '../../../../src/platform/backoff/index.ts';
import { loadConfig } from '../../../../src/config.ts';
import { lastErrorText, outcomeOf } from '../../../../src/platform/push/rules.ts';
import { PUSH_DEFAULTS, pushOptionsOf, pushOptionsProblems } from '../../../../src/platform/push/index.ts';
import { configProblems } from '../../../support/config.ts';

const seedBackoff: Backoff = { baseMs: 2000, factor: 2, capMs: 120_000, jitter: 0.2 };

// The job takes its settings as loadConfig validated them.
const settingsProblems = configProblems;

describe('realtime outbox rules', () => {
  test('backoff: 2 s base doubling per attempt, capped at 2 min, before jitter', () => {
    const noJitter = () => 0;
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 8, 20].map((a) => backoffDelayMs(seedBackoff, a, noJitter)),
      [2000, 4000, 8000, 16_000, 32_000, 64_000, 120_000, 120_000, 120_000],
    );
  });

  test('jitter adds up to its share of the delay and never shortens it', () => {
    assert.equal(backoffDelayMs(seedBackoff, 1, () => 0.999999), Math.round(2000 * (1 + 0.2 * 0.999999)));
    for (let i = 0; i < 200; i++) {
      const d = backoffDelayMs(seedBackoff, 3);
      assert.ok(d >= 8000 && d <= 9600, String(d));
    }
    assert.equal(backoffDelayMs(seedBackoff, 8, () => 1), 144_000, 'the cap applies before the jitter');
  });

  test('outcomes: delivered → Done; transient → Pending until MaxAttempts, then Quarantined; missing entity → Quarantined at once; skipped → Released', () => {
    assert.deepEqual(outcomeOf({ kind: 'delivered' }, 8, 8), { status: 'Done' });
    assert.deepEqual(outcomeOf({ kind: 'transient', error: 'E' }, 1, 8), { status: 'Pending', lastError: 'E' });
    assert.deepEqual(outcomeOf({ kind: 'transient', error: 'E' }, 7, 8), { status: 'Pending', lastError: 'E' });
    assert.deepEqual(outcomeOf({ kind: 'transient', error: 'E' }, 8, 8), { status: 'Quarantined', lastError: 'E' });
    assert.deepEqual(outcomeOf({ kind: 'missing', code: 'RTO_REF_NOT_FOUND' }, 1, 8), { status: 'Quarantined', lastError: 'RTO_REF_NOT_FOUND' });
    assert.deepEqual(outcomeOf({ kind: 'skipped' }, 3, 8), { status: 'Released' });
  });

  test('the claim statement’s schedule is the backoff rule without jitter, one delay per attempt', () => {
    assert.deepEqual(backoffScheduleMs(seedBackoff, 8), [2000, 4000, 8000, 16_000, 32_000, 64_000, 120_000, 120_000]);
  });

  test('settings: BatchSize, MaxAttempts and backoff must be positive and the cap at least the base (refused by loadConfig)', () => {
    const ok = {
      MESSENGER_REALTIME_POLLING_INTERVAL: '1s',
      MESSENGER_REALTIME_BATCH_SIZE: '200',
      MESSENGER_REALTIME_MAX_RUN_DURATION: '5s',
      MESSENGER_REALTIME_MAX_ATTEMPTS: '8',
      MESSENGER_REALTIME_BACKOFF_BASE: '2s',
      MESSENGER_REALTIME_BACKOFF_CAP: '2m',
    };
    assert.deepEqual(settingsProblems(ok), []);
    assert.equal(settingsProblems({ ...ok, MESSENGER_REALTIME_BATCH_SIZE: '0' }).length, 1);
    assert.equal(settingsProblems({ ...ok, MESSENGER_REALTIME_MAX_ATTEMPTS: '0' }).length, 1);
    assert.match(settingsProblems({ ...ok, MESSENGER_REALTIME_BACKOFF_CAP: '1s' }).join(), /CAP/);
  });

  test('options built in code meet the same one check at construction: a LockTtl handed in must pass MaxRunDuration + margin, the jitter stay within 0..1', () => {
    const options = pushOptionsOf(loadConfig({}), PUSH_DEFAULTS);
    assert.deepEqual(pushOptionsProblems(options), []);
    assert.equal(options.lockTtlMs, undefined, 'in service the kernel derives the LockTtl from MaxRunDuration');
    assert.deepEqual(pushOptionsProblems({ ...options, lockTtlMs: 7000 }), []);
    assert.deepEqual(pushOptionsProblems({ ...options, lockTtlMs: 6999 }), ['lock TTL: must be ≥ MESSENGER_REALTIME_MAX_RUN_DURATION + 2000 ms (7000 ms)']);
    assert.deepEqual(pushOptionsProblems({ ...options, backoff: { ...options.backoff, jitter: 1.5 } }), ['backoff jitter: must be between 0 and 1']);
    assert.deepEqual(pushOptionsProblems({ ...options, batchSize: 0 }), ['MESSENGER_REALTIME_BATCH_SIZE: must be > 0']);
  });

  test('LastError keeps class and code, capped at 512 characters', () => {
    const err = Object.assign(new Error('x'.repeat(1000)), { code: 'ECONNREFUSED' });
    const text = lastErrorText(err);
    assert.equal(text.length, 512);
    assert.match(text, /^Error\[ECONNREFUSED\]: x+/);
    assert.equal(lastErrorText('nope'), 'UnknownError');
  });
});
