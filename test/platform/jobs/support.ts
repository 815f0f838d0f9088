import type { TestContext } from 'node:test';
import type pg from 'pg';
import { createDb, createPool } from '../../../src/platform/db/index.ts';
import { createJobRunner, type JobRunner } from '../../../src/platform/jobs/index.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import type { TestDatabase } from '../../support/db.ts';

export interface LogLine {
  level: number;
  msg: string;
  job?: string;
  jobRunId?: string;
  err?: { message: string };
  counts?: Record<string, number>;
  [key: string]: unknown;
}

export const LEVEL = { debug: 20, info: 30, warn: 40, error: 50 } as const;

/** One replica (stopped when the test ends): its own pool, lock and LISTEN connections, registry and captured log. */
export interface Replica {
  runner: JobRunner;
  registry: Registry;
  logs: LogLine[];
  pool: pg.Pool;
}

export function startReplica(t: TestContext, tdb: TestDatabase, opts: { stopTimeoutMs?: number } = {}): Replica {
  const logs: LogLine[] = [];
  const log = createLogger('debug', {
    write: (line: string) => {
      logs.push(JSON.parse(line) as LogLine);
      if (process.env.JOBS_TEST_LOG === '1') process.stderr.write(line);
    },
  });
  const pool = createPool(tdb.url, 3, log);
  const registry = new Registry();
  const runner = createJobRunner({ db: createDb(pool), databaseUrl: tdb.url, log, registry, ...opts });
  t.after(async () => {
    await runner.stop();
    await pool.end();
  });
  return { runner, registry, logs, pool };
}

/** The value of job_runs_total{job,outcome} on a registry. */
export async function runsCounted(registry: Registry, job: string, outcome: string): Promise<number> {
  const metric = registry.getSingleMetric('job_runs_total');
  if (!metric) return 0;
  const { values } = await metric.get();
  return values.find((v) => v.labels.job === job && v.labels.outcome === outcome)?.value ?? 0;
}

/** Fails with `what` instead of hanging the file when a promise that should settle soon does not. */
export async function within<T>(what: string, promise: Promise<T>, timeoutMs = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for: ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
