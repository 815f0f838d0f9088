import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelayMs, backoffScheduleMs, type Backoff } from '../../../../src/platform/backoff/index.ts';
import { dispatchSettingsProblems } from '../../../../src/modules/messenger/realtime-dispatch/dispatch.job.ts';
import { lastErrorText, outcomeOf } from '../../../../src/modules/messenger/realtime-dispatch/rules.ts';

const seedBackoff: Backoff = { baseMs: 2000, factor: 2, capMs: 120_000, jitter: 0.2 };

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

  test('settings: BatchSize, MaxAttempts and backoff must be positive, the cap at least the base, LockTtl past MaxRunDuration + margin', () => {
    const ok = { pollingIntervalMs: 1000, batchSize: 200, maxRunMs: 5000, lockTtlMs: 30_000, pushTimeoutMs: 5000, maxAttempts: 8, backoff: seedBackoff };
    assert.deepEqual(dispatchSettingsProblems(ok), []);
    assert.equal(dispatchSettingsProblems({ ...ok, batchSize: 0 }).length, 1);
    assert.equal(dispatchSettingsProblems({ ...ok, maxAttempts: 0 }).length, 1);
    assert.match(dispatchSettingsProblems({ ...ok, backoff: { ...seedBackoff, capMs: 1000 } }).join(), /CAP/);
    assert.deepEqual(dispatchSettingsProblems({ ...ok, lockTtlMs: 7000 }), []);
    assert.match(dispatchSettingsProblems({ ...ok, lockTtlMs: 6999 }).join(), /lockTtlMs must be an integer ≥ maxRunMs \+ 2000 ms \(7000\)/);
  });

  test('LastError keeps class and code, capped at 512 characters', () => {
    const err = Object.assign(new Error('x'.repeat(1000)), { code: 'ECONNREFUSED' });
    const text = lastErrorText(err);
    assert.equal(text.length, 512);
    assert.match(text, /^Error\[ECONNREFUSED\]: x+/);
    assert.equal(lastErrorText('nope'), 'UnknownError');
  });
});
