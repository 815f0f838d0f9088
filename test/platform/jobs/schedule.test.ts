import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  describeSchedule,
  formatInterval,
  isIdleRun,
  jobDefinitionProblems,
  lockKeyOf,
  normalizeCounts,
} from '../../../src/platform/jobs/schedule.ts';
import { admit, shouldRerun } from '../../../src/platform/jobs/run-slot.ts';
import type { JobDefinition } from '../../../src/platform/jobs/types.ts';

const job = (over: Partial<JobDefinition>): JobDefinition => ({ name: 'sweep', every: 1000, run: async () => {}, ...over });

describe('job definition checks', () => {
  test('a job with exactly one valid schedule passes', () => {
    assert.deepEqual(jobDefinitionProblems(job({})), []);
    assert.deepEqual(jobDefinitionProblems(job({ every: undefined, cron: '*/5 * * * *' })), []);
  });

  test('both or neither of every/cron is rejected', () => {
    assert.match(jobDefinitionProblems(job({ cron: '* * * * *' })).join(), /exactly one of every and cron/);
    assert.match(jobDefinitionProblems(job({ every: undefined })).join(), /exactly one of every and cron/);
  });

  test('every must be a positive integer that setInterval can hold', () => {
    for (const every of [0, -5, 1.5, 2 ** 31]) {
      assert.match(jobDefinitionProblems(job({ every })).join(), /every must be/, `every=${every}`);
    }
  });

  test('a malformed cron pattern, or a date posing as one, is rejected at registration', () => {
    assert.match(jobDefinitionProblems(job({ every: undefined, cron: '61 * * * *' })).join(), /cron:/);
    assert.match(jobDefinitionProblems(job({ every: undefined, cron: '2026-01-01T00:00:00' })).join(), /cron:/);
  });

  test('names must fit job_state.name and wake channels a PostgreSQL identifier', () => {
    assert.match(jobDefinitionProblems(job({ name: '' })).join(), /name/);
    assert.match(jobDefinitionProblems(job({ name: 'x'.repeat(101) })).join(), /name/);
    assert.match(jobDefinitionProblems(job({ wakeChannel: 'c'.repeat(64) })).join(), /wakeChannel/);
  });
});

describe('schedule description', () => {
  test('intervals read in the largest whole unit', () => {
    assert.equal(formatInterval(250), '250ms');
    assert.equal(formatInterval(1500), '1500ms');
    assert.equal(formatInterval(90_000), '90s');
    assert.equal(formatInterval(300_000), '5m');
    assert.equal(formatInterval(3_600_000), '1h');
  });

  test('cron schedules say they are UTC', () => {
    assert.equal(describeSchedule({ every: 60_000 }), 'every 1m');
    assert.equal(describeSchedule({ cron: '0 3 * * *' }), 'cron 0 3 * * * (UTC)');
  });

  test('the lock key follows job:scheduled:<name>', () => {
    assert.equal(lockKeyOf('outbox-publisher'), 'job:scheduled:outbox-publisher');
    assert.equal(lockKeyOf({ name: 'messenger-realtime-dispatch' }), 'job:scheduled:messenger-realtime-dispatch');
  });

  test('a job whose seed spells out its lock keeps that key', () => {
    assert.equal(lockKeyOf({ name: 'notifications-retry-worker', lockKey: 'notifications:retry-worker' }), 'notifications:retry-worker');
  });

  test('job names are one style: lower-case words joined by "-"', () => {
    for (const ok of ['outbox-publisher', 'messenger-realtime-dispatch', 'identity-access-fanout', 'a1']) {
      assert.deepEqual(jobDefinitionProblems({ name: ok, every: 1000, run: async () => {} }), [], ok);
    }
    for (const bad of ['notifications:retry-worker', 'messenger.contact-search-rebuild', 'Outbox', 'a_b', 'a--b', '-a', 'a-']) {
      assert.match(jobDefinitionProblems({ name: bad, every: 1000, run: async () => {} }).join(), /lower-case words joined by "-"/, bad);
    }
  });
});

describe('run counts', () => {
  test('a run that reported nothing or only zeros is idle', () => {
    assert.equal(isIdleRun({}), true);
    assert.equal(isIdleRun({ claimed: 0, sent: 0 }), true);
    assert.equal(isIdleRun({ claimed: 3, sent: 0 }), false);
  });

  test('counts keep finite numbers only; void becomes empty', () => {
    assert.deepEqual(normalizeCounts(undefined), {});
    assert.deepEqual(normalizeCounts({ a: 1, b: 'x', c: Number.NaN, d: 0 }), { a: 1, d: 0 });
  });
});

describe('no-overlap rule', () => {
  const idle = { running: false, rerunRequested: false };
  const busy = { running: true, rerunRequested: false };

  test('an idle job starts on any trigger', () => {
    for (const t of ['tick', 'wake', 'manual'] as const) assert.equal(admit(idle, t, false), 'start');
  });

  test('a tick or manual run while running is dropped; a wake is remembered as one rerun', () => {
    assert.equal(admit(busy, 'tick', false), 'drop');
    assert.equal(admit(busy, 'manual', false), 'drop');
    assert.equal(admit(busy, 'wake', false), 'rerun-after');
  });

  test('nothing starts or reruns while the runner stops', () => {
    assert.equal(admit(idle, 'wake', true), 'drop');
    assert.equal(shouldRerun({ running: false, rerunRequested: true }, true), false);
    assert.equal(shouldRerun({ running: false, rerunRequested: true }, false), true);
    assert.equal(shouldRerun({ running: false, rerunRequested: false }, false), false);
  });
});
