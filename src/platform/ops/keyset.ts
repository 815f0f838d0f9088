import { sql, type SQL } from 'drizzle-orm';
import { AppError } from '../http/index.ts';
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

/**
 * A page's end as the client holds it (the failures' and the audit's `next`): opaque — base64url of
 * the last row's time and id — so the order it encodes can change without a client noticing.
 */
export const cursorText = (at: Date | string, id: string): string => Buffer.from(JSON.stringify([new Date(at).toISOString(), id])).toString('base64url');

/** The cursor `text` holds, or 400 OPS_INVALID_CURSOR for anything this API did not hand out. */
export function cursorOf(text: string, idOk: (id: string) => boolean = (id) => id.length > 0 && id.length <= 200): FailureCursor {
  try {
    const [at, id] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[];
    const when = typeof at === 'string' ? new Date(at) : undefined;
    if (when && !Number.isNaN(when.getTime()) && typeof id === 'string' && idOk(id)) return { at: when, id };
  } catch {
    // not JSON: refused below
  }
  throw new AppError('OPS_INVALID_CURSOR', 'after is not a cursor this API handed out (pass the `next` of the previous page)', 400);
}
