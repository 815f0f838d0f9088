import pg from 'pg';
import { Param, Placeholder, SQL, StringChunk, type Query } from 'drizzle-orm';
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

const dialect = new PgDialect();

/** `sql.inlineParams()` was called on it (drizzle keeps that flag private). */
const inlined = (statement: SQL): boolean => (statement as unknown as { shouldInlineParams: boolean }).shouldInlineParams;

/**
 * The text and parameters of a statement, as drizzle's `sqlToQuery` builds them, for the chunks the
 * service's statements hold: text, nested `sql`, `sql.param` and plain values, walked with
 * instanceof. drizzle tests every chunk against a dozen entity classes with `is()` (a prototype walk
 * each): a profile of the realtime bench found ~4 % of the server's CPU there. Undefined when the
 * statement holds any other chunk (a table, a column, an identifier, a plain array, a placeholder,
 * an inlined statement): drizzle builds those.
 */
export function compileOwn(statement: SQL): Query | undefined {
  let text = '';
  const params: unknown[] = [];
  const walk = (chunks: readonly unknown[]): boolean => {
    for (const chunk of chunks) {
      if (chunk instanceof StringChunk) text += chunk.value.join('');
      else if (chunk instanceof SQL) {
        if (inlined(chunk) || !walk(chunk.queryChunks)) return false;
      } else if (chunk instanceof Param) {
        if (chunk.value instanceof Placeholder) return false; // drizzle keeps it as is for a prepared query's later values
        const value = chunk.value === null ? null : chunk.encoder.mapToDriverValue(chunk.value);
        if (typeof value === 'object' && value !== null && !(value instanceof Date) && !Array.isArray(value)) return false;
        params.push(value);
        text += `$${params.length}`;
      } else if (chunk === undefined) continue;
      else if (chunk === null || typeof chunk === 'string' || typeof chunk === 'number' || typeof chunk === 'boolean' || chunk instanceof Date) {
        params.push(chunk);
        text += `$${params.length}`;
      } else return false;
    }
    return true;
  };
  return !inlined(statement) && walk(statement.queryChunks) ? { sql: text, params } : undefined;
}

const NEEDS_ESCAPE = /["\\]/;

/**
 * An array parameter as the text pg itself would send for it (pg/lib/utils.js arrayString: every
 * element quoted, `\\` and `"` escaped, NULL bare), built with one join and a regex only for the
 * elements that need escaping. pg's own build (string += per element, two replaces per element)
 * was ~17 % of the bytes the user replica consumer allocated and ~4 % of its CPU (batch statements
 * bind arrays of hundreds of elements). Arrays holding anything but primitives (dates, buffers,
 * nested arrays, objects) are returned as they are, for pg to serialise.
 */
export function arrayParam(values: readonly unknown[]): unknown {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || v === undefined) parts[i] = 'NULL';
    else if (typeof v === 'string') parts[i] = '"' + (NEEDS_ESCAPE.test(v) ? v.replace(/\\/g, '\\\\').replace(/"/g, '\\"') : v) + '"';
    else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') parts[i] = '"' + String(v) + '"';
    else return values;
  }
  return '{' + parts.join(',') + '}';
}

/** What `query` runs: our own build where it applies, drizzle's otherwise. */
export const compile = (statement: SQL): Query => compileOwn(statement) ?? dialect.sqlToQuery(statement);

/**
 * Runs one statement written with drizzle's `sql` template (values bound as parameters; pass an
 * array as one parameter with `sql.param(list)`) on the handle given, and returns its rows with pg's
 * usual types. The one way SQL is run in this service; only what must hold one backend or runs
 * before the service (advisory-lock sessions, LISTEN, migrations, the start-up wait, the embedded
 * server's setup) talks to pg directly (docs/architecture.md, "How code is written": SQL).
 */
export async function query<T extends object = Record<string, unknown>>(db: Db, statement: SQL, opts: QueryOptions = {}): Promise<Rows<T>> {
  // What drizzle's `execute` does, with the statement built by `compile` and, when given, a name: its
  // session (the pool's, or the transaction's client) prepares it.
  const built = compile(statement);
  for (let i = 0; i < built.params.length; i++) if (Array.isArray(built.params[i])) built.params[i] = arrayParam(built.params[i] as unknown[]);
  const result = (await db._.session.prepareQuery(built, undefined, opts.name, false).execute()) as pg.QueryResult;
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
