import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { compile, compileOwn } from '../../../src/platform/db/query.ts';

const dialect = new PgDialect();
const drizzle = (statement: SQL) => {
  const { sql: text, params } = dialect.sqlToQuery(statement);
  return { sql: text, params };
};

test('compile builds the same text and parameters as drizzle for the shapes the service writes', () => {
  const at = new Date('2026-12-01T00:00:00Z');
  const ids = ['a', 'b'];
  const col = (values: unknown[], type: string) => sql`${sql.param(values)}::${sql.raw(type)}[]`;
  const statements: SQL[] = [
    sql`select 1`,
    sql``,
    sql`select ${1}, ${'two'}, ${true}, ${null}, ${at}`,
    sql`select * from t where id = any(${sql.param(ids)}::uuid[]) and at < ${at}::timestamptz`,
    sql`with input as (select (${col(ids, 'uuid')})[o] as id from generate_subscripts(${col(ids, 'uuid')}, 1) as o) select ${sql.raw('x')} ${undefined}`,
    sql`insert into t values ${sql.join([sql`(${1}, ${'a'})`, sql`(${2}, ${null})`], sql`, `)}`,
    sql`select ${sql.param(null)}, ${sql.param(7)}, ${sql`nested ${sql`deeper ${'v'}`}`}`,
  ];
  for (const statement of statements) {
    assert.deepEqual(compileOwn(statement), drizzle(statement), 'built by the fast walk, not handed to drizzle');
    assert.deepEqual(compile(statement), drizzle(statement));
  }
});

test('compile leaves to drizzle what it does not walk itself: identifiers, plain arrays, inlined statements, placeholders', () => {
  const statements: SQL[] = [
    sql`select ${sql.identifier('name')} from t`,
    sql`select * from t where id in ${[1, 2, 3]}`,
    sql`select ${'a'}`.inlineParams(),
    sql`select ${sql`${'nested'}`.inlineParams()}`,
    sql`select ${sql.placeholder('later')}, ${sql.param(sql.placeholder('kept'))}`,
  ];
  for (const statement of statements) {
    assert.equal(compileOwn(statement), undefined, 'not walked by compileOwn');
    assert.deepEqual({ ...compile(statement) }, { ...dialect.sqlToQuery(statement) });
  }
  // The plain array expands to one parameter per element, as drizzle does (not one array parameter).
  assert.equal(compile(statements[1]!).sql, 'select * from t where id in ($1, $2, $3)');
});
