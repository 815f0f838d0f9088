import type pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import type { Db, Queryable } from '../../platform/db/index.ts';

/**
 * One transaction on one connection, exposed two ways: `client` for this module's raw SQL (pg's own
 * type parsing, so timestamps come back as Dates) and `tx` for kernel helpers such as the outbox's
 * `enqueue(tx, …)`. Both run inside the same BEGIN … COMMIT. (pg-pool itself discards a connection
 * that broke mid-transaction when it is released.)
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: Queryable, tx: Db) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await drizzle(client).transaction((tx) => work(client, tx));
  } finally {
    client.release();
  }
}
