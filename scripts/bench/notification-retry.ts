/**
 * NotificationRetryWorker benchmark. `node scripts/bench/notification-retry.ts` (no Kafka needed:
 * outcome events are written to the outbox, which is what the worker does). Starts its own embedded
 * PostgreSQL on a free port under /tmp and a local HTTP provider (SMS-gateway style) answering 200,
 * seeds BENCH_NOTIFICATIONS due Failed notifications, then runs the worker until the backlog is empty.
 * Prints ONE JSON line: sends/s (target ≥ 1,000).
 * No realtime dispatcher runs: each send writes its notification_status_changed frame into the
 * realtime outbox in its outcome's transaction, as the service does, and the frames stay there
 * unpushed (as the notifications' own status_events rows did before the frames moved to that
 * outbox), so CPU per 1,000 sends compares the same work across that change.
 * Settings: BENCH_NOTIFICATIONS (20000), BENCH_BATCH_SIZE (200), BENCH_CONCURRENCY (32) — the service defaults,
 * BENCH_PG_FAST=1 (fsync off, as the tests run; default keeps durability on).
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { loadConfig } from '../../src/config.ts';
import { createDb, createPool, migrateDatabase } from '../../src/platform/db/index.ts';
import { Registry } from '../../src/platform/observability/metrics.ts';
import { createHub } from '../../src/platform/realtime/index.ts';
import { newId, systemClock } from '../../src/platform/time.ts';
import { createNotificationMetrics } from '../../src/modules/notifications/metrics.ts';
import { createProviders } from '../../src/modules/notifications/providers/registry.ts';
import { createPush } from '../../src/platform/push/index.ts';
import { STATUS_FRAME_KINDS } from '../../src/modules/notifications/status-frames.ts';
import { retryWorkerJob } from '../../src/modules/notifications/delivery/retry-worker.job.ts';
import { deliveryJobOptions } from '../../src/modules/notifications/settings.ts';
import { benchLogger, cpuMeter, machine, say, startBenchPostgres } from './support.ts';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const COUNT = env('BENCH_NOTIFICATIONS', 20_000);
const BATCH = env('BENCH_BATCH_SIZE', 200); // NOTIFICATIONS_DEFAULTS.retryBatchSize
const CONCURRENCY = env('BENCH_CONCURRENCY', 32); // NOTIFICATIONS_DEFAULTS.sendConcurrency
const log = benchLogger('warn');


// The provider: answers every POST with 200 and a message id, like an SMS gateway on localhost.
let providerRequests = 0;
const provider = createHttpServer((req, res) => {
  req.resume();
  req.on('end', () => {
    providerRequests++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`{"messageId":"gw-${providerRequests}"}`);
  });
});
provider.keepAliveTimeout = 30_000;
await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
const providerUrl = `http://127.0.0.1:${(provider.address() as { port: number }).port}`;

const pgServer = await startBenchPostgres(log);
const pool = createPool(pgServer.url, 20, log);
await migrateDatabase(pool);

const config = loadConfig({ LOG_LEVEL: 'warn', NOTIFICATIONS_SMS_HTTP_URL: providerUrl });
const registry = new Registry();
const hub = createHub({ secret: config.JWT_SECRET, registry, logger: log });
const providers = createProviders(config, { hub, clock: systemClock });
const db = createDb(pool);
const metrics = createNotificationMetrics(registry, { db, providers, clock: systemClock });
const worker = retryWorkerJob(
  { db, providers, metrics, hub, userFrames: statusFrames() },
  // The service's mapping, with the bench's batch and concurrency, and one run for the whole backlog.
  { ...deliveryJobOptions().retryWorker, batchSize: BATCH, concurrency: CONCURRENCY, maxRunMs: 3_600_000 },
);

say(`seeding ${COUNT} due Failed notifications`);
await pool.query(`update notifications.channel_configs set is_enabled = true, max_attempts = 5 where channel = 'Sms'`);
await pool.query(
  `insert into notifications.notifications
     (id, recipient_user_id, channel, recipient_address, title, body, status, attempts, next_attempt_at, last_error, created_at, updated_at)
   select gen_random_uuid(), gen_random_uuid(), 'Sms', '+7999' || lpad(i::text, 7, '0'), 'Price changed', 'The flat you follow is cheaper now',
          'Failed', 1, now() - interval '1 minute' * (i % 60), 'NTF_PROVIDER_TRANSIENT', now() - interval '2 hours', now() - interval '2 hours'
     from generate_series(1, $1::int) i`,
  [COUNT],
);
await pool.query('vacuum analyze notifications.notifications');

say(`retrying with batch ${BATCH}, ${CONCURRENCY} sends in flight`);
const t0 = performance.now();
const cpu = cpuMeter(pgServer.dataDir);
let sent = 0;
let runs = 0;
for (;;) {
  const counts = await worker.runOnce({ jobRunId: newId(), signal: new AbortController().signal, log, now: () => systemClock.now() });
  runs++;
  sent += counts.sent ?? 0;
  if (counts.claimed === 0) break;
  if ((counts.retried ?? 0) + (counts.terminal ?? 0) > 0) throw new Error(`unexpected failures: ${JSON.stringify(counts)}`);
}
const seconds = (performance.now() - t0) / 1000;
const cpuPer1000Sends = cpu.per1000(sent);
const { rows } = await pool.query<{ sent: string; backlog: string; events: string }>(
  `select (select count(*) from notifications.notifications where status = 'Sent') as sent,
          (select count(*) from notifications.notifications where status = 'Failed') as backlog,
          (select count(*) from platform.outbox where event_type = 'NotificationDispatchedEvent') as events`,
);
say(`sent ${sent} in ${seconds.toFixed(2)} s`);

await providers.close();
await hub.close();
await pool.end();
await pgServer.stop();
provider.close();
provider.closeAllConnections();

console.log(
  JSON.stringify({
    bench: 'notification-retry',
    machine: machine(),
    postgres: { durability: pgServer.durability },
    notifications: COUNT,
    batchSize: BATCH,
    concurrency: CONCURRENCY,
    workerRuns: runs,
    seconds: Number(seconds.toFixed(2)),
    sendsPerSec: Math.round(sent / seconds),
    cpuMsPer1000Sends: cpuPer1000Sends,
    target: 1000,
    check: { sent: Number(rows[0]!.sent), backlogLeft: Number(rows[0]!.backlog), dispatchedEvents: Number(rows[0]!.events), providerRequests },
  }),
);
process.exit(0);

/** The kernel's push port with notifications' carried kind registered, as the app builds it. */
function statusFrames() {
  const push = createPush();
  push.registerKinds(STATUS_FRAME_KINDS);
  return push.userFrames;
}
