import type pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import type { Tx } from '../../platform/db/index.ts';

/** A client raw SQL runs on: the pool, or the connection of an open transaction. */
export type Client = Pick<pg.PoolClient, 'query'>;

/**
 * One transaction on one connection, exposed two ways: `client` for this module's raw SQL (pg's own
 * type parsing, so timestamps come back as Dates) and `tx` for kernel helpers such as the outbox's
 * `enqueue(tx, …)`. Both run inside the same BEGIN … COMMIT. (pg-pool itself discards a connection
 * that broke mid-transaction when it is released.)
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: Client, tx: Tx) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await drizzle(client).transaction((tx) => work(client, tx));
  } finally {
    client.release();
  }
}
