import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { settingsProblems } from '../../src/platform/types/index.ts';

const fields = {
  A_BATCH_SIZE: Type.Integer({ default: 10, minimum: 1, maximum: 100, description: 'rows per batch' }),
  A_MAX_ATTEMPTS: Type.Integer({ default: 5, minimum: 1, maximum: 10, description: 'attempts' }),
};

test('settingsProblems names each value outside its field bounds, with the field description', () => {
  assert.deepEqual(settingsProblems(fields, { A_BATCH_SIZE: 10, A_MAX_ATTEMPTS: 5 }), []);
  const [problem, ...rest] = settingsProblems(fields, { A_BATCH_SIZE: 0, A_MAX_ATTEMPTS: 5 });
  assert.equal(rest.length, 0);
  assert.match(problem!, /^A_BATCH_SIZE: .* \(got 0\) — rows per batch$/);
});

test('settingsProblems checks only the fields given and lets keys that are no field pass (a whole config object)', () => {
  assert.deepEqual(settingsProblems(fields, { A_MAX_ATTEMPTS: 5 }), []);
  assert.deepEqual(settingsProblems(fields, { A_BATCH_SIZE: 10, A_MAX_ATTEMPTS: 5, OTHER_SETTING: 'x' } as never), []);
  assert.equal(settingsProblems(fields, { A_MAX_ATTEMPTS: 11, OTHER_SETTING: 'x' } as never).length, 1);
});
