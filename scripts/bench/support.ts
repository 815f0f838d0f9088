/** What every benchmark shares: a stderr logger, its own embedded PostgreSQL, the machine it ran on. */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createServer } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { pino } from 'pino';
import { startEmbeddedPostgres } from '../../src/platform/db/embedded.ts';
import { createLogger, type Logger } from '../../src/platform/observability/logger.ts';

/** Logs go to stderr: stdout carries the one JSON line. */
export const benchLogger = (defaultLevel = 'warn'): Logger =>
  createLogger(process.env.BENCH_LOG_LEVEL ?? defaultLevel, pino.destination(2));

export const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/**
 * A throwaway PostgreSQL on a free port with durable defaults (BENCH_PG_FAST=1 turns fsync off, as
 * in the tests); `stop()` also removes its data directory.
 */
export async function startBenchPostgres(log: Logger, name = 'bench'): Promise<{ url: string; durability: string; stop(): Promise<void> }> {
  const port = await freePort();
  const dataDir = `/tmp/pin-${name}-pg-${port}`;
  rmSync(dataDir, { recursive: true, force: true });
  const fast = process.env.BENCH_PG_FAST === '1';
  const server = await startEmbeddedPostgres({
    dataDir,
    port,
    log,
    database: 'bench',
    flags: fast ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off'] : [],
  });
  return {
    url: server.url,
    durability: fast ? 'fsync off (BENCH_PG_FAST=1)' : 'default (fsync on)',
    async stop() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The machine the figures were measured on, for the JSON line. */
export function machine(): { cpus: number; model: string | undefined; memGiB: number; node: string } {
  const cpu = cpus();
  return { cpus: cpu.length, model: cpu[0]?.model, memGiB: Math.round(totalmem() / 2 ** 30), node: process.version };
}

/**
 * Runs `fn`; with BENCH_PROFILE_DIR set, records a CPU profile of this thread during it only
 * (`<dir>/<name>.cpuprofile`, open in Chrome DevTools), so a phase can be profiled without the
 * set-up around it.
 */
export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_PROFILE_DIR;
  if (!dir) return fn();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/${name}.cpuprofile`, JSON.stringify(profile));
    session.disconnect();
    say(`cpu profile of ${name} written to ${dir}/${name}.cpuprofile`);
  }
}
