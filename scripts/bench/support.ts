/** What every benchmark shares: a stderr logger, its own embedded PostgreSQL, the machine it ran on. */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { pino } from 'pino';
import { freeLocalPort, startEmbeddedPostgres } from '../../src/platform/db/embedded.ts';
import { createLogger, type Logger } from '../../src/platform/observability/logger.ts';
import { cpuSnapshot } from './cpu-shares.ts';
import type { KafkaClientName } from '../../src/platform/events/kafka-options.ts';

/** Logs go to stderr: stdout carries the one JSON line. */
export const benchLogger = (defaultLevel = 'warn'): Logger =>
  createLogger(process.env.BENCH_LOG_LEVEL ?? defaultLevel, pino.destination(2));

export const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

export const freePort = freeLocalPort;

/**
 * A throwaway PostgreSQL on a free port with durable defaults (BENCH_PG_FAST=1 turns fsync off, as
 * in the tests); `statements` preloads pg_stat_statements; `stop()` also removes its data directory.
 */
export async function startBenchPostgres(
  log: Logger,
  name = 'bench',
  opts: { statements?: boolean } = {},
): Promise<{ url: string; dataDir: string; durability: string; stop(): Promise<void> }> {
  const port = await freePort();
  const dataDir = `/tmp/pin-${name}-pg-${port}`;
  rmSync(dataDir, { recursive: true, force: true });
  const fast = process.env.BENCH_PG_FAST === '1';
  const server = await startEmbeddedPostgres({
    dataDir,
    port,
    log,
    database: 'bench',
    flags: [
      ...(fast ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off'] : []),
      // pg_stat_statements (a bench that reads statements per unit creates the extension).
      ...(opts.statements ? ['-c', 'shared_preload_libraries=pg_stat_statements'] : []),
      // Extra server flags for a profiling run, e.g. auto_explain (see README.md).
      ...(process.env.BENCH_PG_FLAGS?.split(/\s+/).filter(Boolean) ?? []),
    ],
  });
  return {
    url: server.url,
    dataDir,
    durability: fast ? 'fsync off (BENCH_PG_FAST=1)' : 'default (fsync on)',
    async stop() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The machine the figures were measured on, for the JSON line. */
/** The machine, with its load averages when the figure is taken (the machine is shared: a figure under load is read with it). */
export function machine(): { cpus: number; model: string | undefined; memGiB: number; node: string; load: number[] } {
  const cpu = cpus();
  return { cpus: cpu.length, model: cpu[0]?.model, memGiB: Math.round(totalmem() / 2 ** 30), node: process.version, load: loadavg().map((l) => Number(l.toFixed(2))) };
}

/** The Kafka client the bench runs the bus on: KAFKA_CLIENT, as the app reads it (kafkajs unless it says platformatic). */
export const benchKafkaClient: KafkaClientName = process.env.KAFKA_CLIENT === 'platformatic' ? 'platformatic' : 'kafkajs';

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

/**
 * Profiles this thread from now until stop() (a window the caller picks: set-up stays out), written
 * to `file`; null when no file is asked for (BENCH_CPU_PROFILE unset).
 */
export async function windowProfile(file: string | undefined, what: string): Promise<{ stop(): Promise<void> } | null> {
  if (!file) return null;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
      say(`CPU profile of the ${what}: ${file}`);
    },
  };
}

/** Committed and rolled-back transactions of the bench database so far (pg_stat_database; statements outside a transaction count one each). */
export async function transactionsSoFar(pool: import('pg').Pool): Promise<number> {
  await pool.query('select pg_stat_force_next_flush()');
  const { rows } = await pool.query<{ n: string }>(`select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()`);
  return Number(rows[0]!.n);
}

/**
 * CPU spent from now on by this process (every thread) and by the bench's PostgreSQL (the server
 * and its backends), per 1,000 units of work. On a shared 2-core VM wall time moves ±30 % run to run
 * with steal and neighbours; CPU per unit moves far less, so a before/after comparison reads this.
 */
export function cpuMeter(pgDataDir: string): { per1000(units: number): { processMs: number; postgresMs: number } } {
  const process0 = process.cpuUsage();
  const pg0 = cpuSnapshot(pgDataDir).postgres;
  return {
    per1000(units) {
      const { user, system } = process.cpuUsage(process0);
      const pg1 = cpuSnapshot(pgDataDir).postgres;
      const postgresSeconds = [...pg1].reduce((s, [pid, secs]) => s + secs - (pg0.get(pid) ?? 0), 0);
      const per1000 = (seconds: number) => Math.round(((seconds * 1000) / units) * 1000 * 10) / 10;
      return { processMs: per1000((user + system) / 1e6), postgresMs: per1000(postgresSeconds) };
    },
  };
}
