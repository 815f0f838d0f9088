import { setTimeout as sleep } from 'node:timers/promises';
import { signToken } from '../../../src/platform/http/auth.ts';
import { newId } from '../../../src/platform/time.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createTestKafka, type TestKafka } from '../../support/kafka.ts';
import { SECURE_SECRETS } from '../../support/secure-env.ts';
import type { ServiceTuning } from '../../../src/service.ts';
import { freePort, startService, tunedService, type ServiceProcess } from '../../support/service-process.ts';
import { waitFor } from '../../support/wait.ts';
import { startHttpProvider, type FakeHttpProvider } from '../../modules/notifications/providers-support.ts';

/**
 * The real stack for a fault scenario: a fresh database, the shared Kafka broker under a topic prefix
 * of its own, the shared Redis as the hub backplane, a local SMS/push provider, and replicas of the
 * service as child processes on all of them (its start-up as `node src/main.ts`, with short fixed
 * values handed in code: test/support/service-entry.ts). Settings are small so that a 2-core machine
 * gets through twenty restarts quickly.
 */

export interface Replica {
  name: string;
  /** http://127.0.0.1:<port> */
  url: string;
  service: ServiceProcess;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  alive(): boolean;
}

export interface Reply<T> {
  status: number;
  body: T;
}

export interface Stack {
  database: TestDatabase;
  kafka: TestKafka;
  provider: FakeHttpProvider;
  adminToken: string;
  userToken(userId: string): Promise<string>;
  /** A replica; `jobs: false` serves HTTP and the hub only (no jobs, no consumers); `tuning` over FAST_TUNING. */
  start(name: string, opts?: { jobs?: boolean; env?: Record<string, string>; tuning?: ServiceTuning }): Promise<Replica>;
  /** One JSON request (the admin token unless another is given). */
  call<T = unknown>(r: Replica, method: string, path: string, body?: unknown, token?: string): Promise<Reply<T>>;
}

/** Batch sizes of the workers under test: a kill may repeat at most a batch (two for the outbox: one marked, one sent). */
export const FAST_BATCH = { outbox: 20, realtime: 10, fanOut: 7, closer: 5, notifications: 10 } as const;

/** Small batches and short intervals: many batches, leases and backoffs inside one short run. */
const FAST_SETTINGS: Record<string, string> = {
  LOG_LEVEL: 'warn',
  SHUTDOWN_TIMEOUT: '5s',
  DATABASE_POOL_MAX: '6',
  OUTBOX_POLLING_INTERVAL: '200ms',
  MESSENGER_REALTIME_BATCH_SIZE: String(FAST_BATCH.realtime),
  MESSENGER_REALTIME_POLLING_INTERVAL: '200ms',
  MESSENGER_REALTIME_BACKOFF_BASE: '1s',
  MESSENGER_REALTIME_BACKOFF_CAP: '2s',
  MESSENGER_REALTIME_MAX_ATTEMPTS: '50',
  USER_ACTIVITY_CLOSER_POLLING_INTERVAL: '1s',
  USER_ACTIVITY_CLOSER_BATCH_SIZE: String(FAST_BATCH.closer),
  IDENTITY_INLINE_FANOUT_THRESHOLD: '5',
  IDENTITY_ACCESS_FANOUT_BATCH_SIZE: String(FAST_BATCH.fanOut),
  IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL: '500ms',
  IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION: '5s',
  IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS: '100',
  // Compiled TypeScript and dependencies are reused across the twenty restarts.
  NODE_COMPILE_CACHE: '/tmp/pin-faults-compile-cache',
};

/** The same for the fixed values (not settings), handed to each replica in code. */
const FAST_TUNING = {
  kernel: {
    kafkaTopicPartitions: 3,
    // A SIGKILLed member holds its partitions (and delays the next join) this long: shorter than a
    // restart, so each new life of the consumer gets its partitions at once (scripts/kafka.sh allows it).
    kafkaConsumerSessionTimeoutMs: 3000,
    outboxBatchSize: FAST_BATCH.outbox,
  },
  notifications: {
    dispatchPollingIntervalMs: 500,
    dispatchBatchSize: FAST_BATCH.notifications,
    sendConcurrency: 4,
    retryPollingIntervalMs: 1000,
    retryBatchSize: FAST_BATCH.notifications,
    claimLeaseMs: 10_000,
    providerTimeoutMs: 3000,
  },
  // Rate limits count in the shared Redis per route and client address, and every test process
  // calls from 127.0.0.1: a test file running beside the fault suite would eat the workloads' budget
  // (view opens got 429 under a loaded run). Limits are tested on their own, not here.
  userActivity: { rateLimitTrackingPerMinute: 0 },
} satisfies ServiceTuning;

/**
 * `database`/`brokers`: a scenario's own PostgreSQL and broker (which it may stop) instead of a fresh
 * database on the shared test server and the shared broker.
 */
export async function createStack(opts: { database?: TestDatabase; brokers?: string[] } = {}): Promise<Stack> {
  const [database, kafka, provider] = await Promise.all([
    opts.database ?? createTestDatabase(),
    createTestKafka(opts.brokers ? { brokers: opts.brokers } : {}),
    startHttpProvider(),
  ]);
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl) throw new Error('REDIS_URL is unset: run the fault suite with `npm run test:faults`');
  const baseEnv: Record<string, string> = {
    ...FAST_SETTINGS,
    DATABASE_URL: database.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    KAFKA_TOPIC_PREFIX: kafka.prefix,
    REDIS_URL: redisUrl,
    REALTIME_BACKPLANE_ENABLED: 'true',
    NOTIFICATIONS_SMS_HTTP_URL: provider.baseUrl,
    NOTIFICATIONS_SMS_HTTP_SECRET: 'sms-api-credential-0123',
    NOTIFICATIONS_PUSH_HTTP_URL: provider.baseUrl,
  };

  async function start(name: string, opts: { jobs?: boolean; env?: Record<string, string>; tuning?: ServiceTuning } = {}): Promise<Replica> {
    const tuning: ServiceTuning = {
      kernel: { ...FAST_TUNING.kernel, ...opts.tuning?.kernel },
      notifications: { ...FAST_TUNING.notifications, ...opts.tuning?.notifications },
      messenger: opts.tuning?.messenger,
      userActivity: { ...FAST_TUNING.userActivity, ...opts.tuning?.userActivity },
    };
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const service = startService({ ...baseEnv, PORT: String(port), JOBS_ENABLED: String(opts.jobs ?? true), ...opts.env }, tunedService(tuning));
      const url = `http://127.0.0.1:${port}`;
      const alive = () => service.child.exitCode === null && service.child.signalCode === null;
      const up = await waitFor(
        `replica ${name} to answer /health/live`,
        async () => !alive() || (await fetch(`${url}/health/live`).then((r) => r.ok, () => false)),
        90_000,
      ).then(alive);
      if (!up) {
        // The free port was taken by someone else between the pick and the listen: pick again.
        if (attempt < 3 && service.log.text.includes('EADDRINUSE')) continue;
        throw new Error(`replica ${name} exited at start: ${service.log.text.slice(-3000)}`);
      }
      return {
        name,
        url,
        service,
        alive,
        async kill() {
          if (!alive()) return;
          service.child.kill('SIGKILL');
          await service.exited;
        },
      };
    }
  }

  async function call<T>(r: Replica, method: string, path: string, body?: unknown, token?: string): Promise<Reply<T>> {
    // A request cut by a kill (the target was the one killed) is retried by the caller's loop, not here.
    const res = await fetch(`${r.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token ?? adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  }

  const adminToken = await signToken({ userId: newId(), admin: true }, SECURE_SECRETS.JWT_SECRET);
  return {
    database,
    kafka,
    provider,
    adminToken,
    userToken: (userId) => signToken({ userId, admin: false }, SECURE_SECRETS.JWT_SECRET),
    start,
    call,
  };
}

/** Calls `step` every `gapMs` until stopped; failures are counted and the first few kept. */
export function repeat(gapMs: number, step: () => Promise<void>): { stop(): Promise<void>; errors: string[]; failures(): number } {
  let running = true;
  let failures = 0;
  const errors: string[] = [];
  const loop = (async () => {
    while (running) {
      try {
        await step();
      } catch (err) {
        failures += 1;
        if (errors.length < 5) errors.push(String(err));
      }
      await sleep(gapMs);
    }
  })();
  return {
    errors,
    failures: () => failures,
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** A phone number of the accepted shape, unique enough within one run. */
export function uniquePhone(n: number): string {
  return `+7916${String(1_000_000 + n).slice(-7)}`;
}
