import { after } from 'node:test';
import type pg from 'pg';
import { createDb, createPool, type Db } from '../../src/platform/db/index.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

export interface ProxiedDatabase {
  /** The database itself: the test seeds and reads rows here, whatever the proxy does. */
  direct: TestDatabase;
  /** A pool and Db through the proxy, for the code under test. */
  pool: pg.Pool;
  db: Db;
  url: string;
  proxy: TcpProxy;
}

/** A fresh database reached through a TCP proxy, so a test can take PostgreSQL away from the code under test only. */
export async function createProxiedDatabase(poolMax = 5): Promise<ProxiedDatabase> {
  const direct = await createTestDatabase();
  const target = new URL(direct.url);
  const proxy = await startTcpProxy(Number(target.port), target.hostname);
  const proxied = new URL(direct.url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  const pool = createPool(proxied.toString(), poolMax);
  after(() => pool.end());
  return { direct, pool, db: createDb(pool), url: proxied.toString(), proxy };
}
