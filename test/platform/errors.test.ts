import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { causeChain, errorText, isPgError, pgErrorOf, rootCause } from '../../src/platform/errors/index.ts';

const dbError = (code: string, constraint?: string) => Object.assign(new pg.DatabaseError('duplicate key value violates unique constraint', 0, 'error'), { code, constraint });

test('the PostgreSQL error is found behind the wrappers drizzle and kafkajs put around it', () => {
  const driver = dbError('23505', 'users_phone_key');
  const wrapped = new Error('Failed query: insert into … params: +79991234567', { cause: driver });
  const kafkaStyle = Object.assign(new Error('outer'), { originalError: wrapped });
  assert.equal(pgErrorOf(kafkaStyle), driver);
  assert.equal(isPgError(kafkaStyle, '23505'), true);
  assert.equal(isPgError(kafkaStyle, '23505', 'users_phone_key'), true);
  assert.equal(isPgError(kafkaStyle, '23505', 'other_key'), false);
  assert.equal(isPgError(kafkaStyle, '23503'), false);
});

test('an error that is not PostgreSQL is not mistaken for one, even with a code field', () => {
  const econn = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  assert.equal(pgErrorOf(new Error('x', { cause: econn })), undefined);
  assert.equal(pgErrorOf('a string'), undefined);
  // A plain object carrying a SQLSTATE and a severity (as pg-protocol fields arrive) counts.
  assert.equal(pgErrorOf({ code: '40001', severity: 'ERROR' })?.code, '40001');
});

test('the cause chain ends on cycles and after eight links', () => {
  const a = new Error('a');
  const b = new Error('b', { cause: a });
  (a as { cause?: unknown }).cause = b;
  assert.equal([...causeChain(b)].length, 2);
  let deep: Error = new Error('0');
  for (let i = 1; i < 20; i++) deep = new Error(String(i), { cause: deep });
  assert.equal([...causeChain(deep)].length, 8);
});

test('errorText names the innermost cause and is cut to its limit', () => {
  const root = new TypeError('x'.repeat(1000));
  assert.equal(rootCause(new Error('outer', { cause: root })), root);
  const text = errorText(new Error('outer', { cause: root }), { max: 50 });
  assert.equal(text.length, 50);
  assert.match(text, /^TypeError: x+…$/);
});
