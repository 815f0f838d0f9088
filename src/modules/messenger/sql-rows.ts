import type { SQL } from 'drizzle-orm';
import type { Db } from '../../platform/db/index.ts';

/**
 * How every part of the messenger reads rows through drizzle's `execute`: the rows of a raw SQL
 * statement, and its timestamps, which come back as text inside a transaction, as ISO strings.
 */

export async function rowsOf<T>(db: Db, query: SQL): Promise<T[]> {
  return (await db.execute<T & Record<string, unknown>>(query)).rows as T[];
}

export const isoOf = (v: string | Date | null): string | null => (v === null ? null : new Date(v).toISOString());
