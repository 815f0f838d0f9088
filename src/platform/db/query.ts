import pg from 'pg';
import type { SQL } from 'drizzle-orm';
import type { NodePgQueryResultHKT } from 'drizzle-orm/node-postgres';
import { PgDialect, type PgDatabase } from 'drizzle-orm/pg-core';

/**
 * The one handle SQL runs on: the pool's drizzle database or an open transaction (`db.transaction(
 * async (tx) => …)` hands a `Db` too), so a SQL function never cares which it got.
 */
export type Db = PgDatabase<NodePgQueryResultHKT, Record<string, never>>;

export interface Rows<T> {
  rows: T[];
  rowCount: number;
}

/**
 * Type ids whose text drizzle hands back unparsed (it maps them itself for its query builder):
 * timestamptz, timestamp, date, interval and their arrays. `query` parses them the way pg does, so a
 * `timestamptz` column is a `Date` in every row the service reads.
 */
const UNPARSED_BY_DRIZZLE = [1184, 1114, 1082, 1186, 1185, 1115, 1182, 1187];
const parsers = new Map(UNPARSED_BY_DRIZZLE.map((oid) => [oid, pg.types.getTypeParser(oid, 'text') as (v: string) => unknown]));

export interface QueryOptions {
  /**
   * Runs it as a named prepared statement: each connection parses and plans it once, then only
   * binds and executes it. For hot statements whose planning costs about as much as running them.
   * The name must always go with the same text (pg refuses a name reused for another statement).
   */
  name?: string;
}

/** Builds the text and parameters of a named statement, as drizzle's own `execute` does for an unnamed one. */
const dialect = new PgDialect();

/**
 * Runs one statement written with drizzle's `sql` template (values bound as parameters; pass an
 * array as one parameter with `sql.param(list)`) on the handle given, and returns its rows with pg's
 * usual types. The one way SQL is run in this service; only what must hold one backend or runs
 * before the service (advisory-lock sessions, LISTEN, migrations, the start-up wait, the embedded
 * server's setup) talks to pg directly (README "SQL.").
 */
export async function query<T extends object = Record<string, unknown>>(db: Db, statement: SQL, opts: QueryOptions = {}): Promise<Rows<T>> {
  // drizzle's `execute` prepares unnamed; its session (the pool's, or the transaction's client) takes a name too.
  const result =
    opts.name === undefined
      ? await db.execute(statement)
      : ((await db._.session.prepareQuery(dialect.sqlToQuery(statement), undefined, opts.name, false).execute()) as pg.QueryResult);
  const rows = result.rows as Record<string, unknown>[];
  const parsed = result.fields.filter((f) => parsers.has(f.dataTypeID));
  if (parsed.length > 0) {
    for (const row of rows) {
      for (const f of parsed) {
        const v = row[f.name];
        if (typeof v === 'string') row[f.name] = parsers.get(f.dataTypeID)!(v);
      }
    }
  }
  return { rows: rows as T[], rowCount: result.rowCount ?? rows.length };
}
