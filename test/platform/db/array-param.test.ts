import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { arrayParam } from '../../../src/platform/db/query.ts';

// pg's own serialisation of a parameter, the reference arrayParam must match byte for byte.
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (v: unknown) => unknown };

test('arrayParam sends the text pg itself would build for arrays of strings, numbers, booleans and nulls', () => {
  const arrays: unknown[][] = [
    [],
    ['3f1c4a2e-0000-4000-8000-000000000001', '3f1c4a2e-0000-4000-8000-000000000002'],
    ['', 'NULL', 'null', 'a,b', '{x}', ' padded ', 'quote"d', 'back\\slash', '\\"both\\"', 'Имя Фамилия', 'tab\tnew\nline', '😀'],
    [null, undefined, 'x', null],
    [0, -1, 1.5, 9007199254740991, Number.NaN, 12n],
    [true, false, null],
  ];
  for (const values of arrays) assert.equal(arrayParam(values), prepareValue(values), JSON.stringify(values.map(String)));
});

test('arrayParam leaves arrays holding dates, buffers, nested arrays or objects to pg', () => {
  const arrays: unknown[][] = [[new Date(0)], ['a', Buffer.from('b')], [['nested']], [{ a: 1 }]];
  for (const values of arrays) assert.equal(arrayParam(values), values);
});
