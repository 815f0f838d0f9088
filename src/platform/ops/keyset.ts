import { sql, type SQL } from 'drizzle-orm';
import type { FailureCursor } from './types.ts';

/**
 * The failures pages' keyset, for a FailureSource over a table: rows in (at, id) order, `at` cut to
 * the millisecond as FailureRow.at carries it (a cursor made from a row's ISO time then never lets
 * that row in again), the id compared as text (a cursor's id is whatever the client sent: a cast
 * could fail; a canonical UUID sorts the same either way). Failed rows are few: no index is needed.
 */

export const keysetOrder = (at: SQL): SQL => sql`date_trunc('milliseconds', ${at}), id::text`;

/** `and (at, id) > cursor`, or nothing on the first page. */
export const keysetAfter = (at: SQL, after?: FailureCursor): SQL =>
  after ? sql`and (date_trunc('milliseconds', ${at}), id::text) > (${after.at.toISOString()}::timestamptz, ${after.id}::text)` : sql``;
