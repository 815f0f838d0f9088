/**
 * Reconnect storm benchmark (a deploy: every client reconnects at once). `node scripts/bench/storm.ts`.
 * Starts its own embedded PostgreSQL and the service in this process (messenger module, in-process
 * event bus, jobs off), seeds N users, each an Active member of some group chats and of one Direct
 * chat (so the hub's group resolution and the presence announcement at connect do real work), then
 * forks a client process that offers N connects within SPREAD ms, each with its own official
 * @microsoft/signalr client and its own HS256 JWT (verified by the hub), the client's default
 * (negotiate, then WebSocket). The admission rate limit is set above the offered rate
 * (HUB_MAX_CONNECTS_PER_SECOND = 1,000,000, its maximum), so it refuses nothing here.
 * Reports (ONE JSON line on stdout, progress on stderr):
 *   - accepted/s (connected ÷ time from the first offer until the last start() settled, as the
 *     peer's storm.mjs counts it), connect latency p50/p95/p99/max, failures by reason;
 *   - how busy the server's event loop was over the window (below 1: it waited for the clients);
 *   - CPU over the storm window (first offer until every start() settled, plus DRAIN ms of deferred
 *     work such as presence announcements) per connect: the server's thread (user and kernel time;
 *     ofWhichKernel is the kernel part of it), the server process's other threads (V8, libuv), the
 *     two together (serverProcess: what the peer's figure counts), PostgreSQL, Redis when the backplane is on (the
 *     shared redis-server: other users' load counts too), and the client process for reference;
 *   - PostgreSQL transactions per connect (pg_stat_database; each statement outside a transaction is one);
 *   - RSS of the server process per idle connection after SETTLE ms (no forced GC, as the peer);
 *   - the machine.
 * Settings: BENCH_CLIENTS (5000), BENCH_SPREAD_MS (1000), BENCH_GROUPS_PER_USER (5; group chats of
 * BENCH_CHAT_SIZE, 10), BENCH_WARMUP (200 more users connect and leave before the window), BENCH_DRAIN_MS (1000), BENCH_SETTLE_MS (5000), BENCH_SKIP_NEGOTIATION=1
 * (WebSocket straight away), BENCH_BACKPLANE=1 (Redis backplane and presence at REDIS_URL, default
 * redis://127.0.0.1:16379), BENCH_PG_FAST=1 (fsync off), BENCH_LOG_LEVEL (error),
 * BENCH_CPU_PROFILE=<file> (CPU profile of the server's thread over the storm window);
 * MESSENGER_* and HUB_* settings are taken from the environment.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createPool, migrateDatabase } from '../../src/platform/db/index.ts';
import { signToken } from '../../src/platform/http/auth.ts';
import { newId } from '../../src/platform/time.ts';
import messenger from '../../src/modules/messenger/index.ts';
import { cpuSecondsOfPid, cpuShares, cpuSnapshot } from './cpu-shares.ts';
import { benchLogger, machine, say, startBenchPostgres, transactionsSoFar, windowProfile } from './support.ts';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const CLIENTS = env('BENCH_CLIENTS', 5000);
const SPREAD_MS = env('BENCH_SPREAD_MS', 1000);
const GROUPS_PER_USER = env('BENCH_GROUPS_PER_USER', 5);
const CHAT_SIZE = env('BENCH_CHAT_SIZE', 10);
const DRAIN_MS = env('BENCH_DRAIN_MS', 1000);
const SETTLE_MS = env('BENCH_SETTLE_MS', 5000);
const WARMUP = env('BENCH_WARMUP', 200);
const BACKPLANE = process.env.BENCH_BACKPLANE === '1';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:16379';

interface Plan {
  baseUrl: string;
  tokens: string[];
  spreadMs: number;
  skipNegotiation: boolean;
}
interface Outcome {
  type: 'done';
  connected: number;
  failures: Record<string, number>;
  allMs: number;
  latencies: number[];
}

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? null : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!));

/** The client process: offers every connect on schedule, each its own HubConnection, as storm.mjs does. */
async function runClients(): Promise<void> {
  // The CommonJS build, as the peer's storm.mjs loads it (one copy for both sides' figures).
  const signalr = createRequire(import.meta.url)('@microsoft/signalr') as typeof import('@microsoft/signalr');
  const build = (baseUrl: string, token: string, skipNegotiation: boolean) =>
    new signalr.HubConnectionBuilder()
      .withUrl(`${baseUrl}/hubs/messenger`, { accessTokenFactory: () => token, transport: signalr.HttpTransportType.WebSockets, skipNegotiation })
      .configureLogging(signalr.LogLevel.None)
      .build();
  // Warm-up outside the window: the client's lazily loaded modules and both sides' JIT.
  const warm = await new Promise<Plan>((resolve) => process.once('message', (m) => resolve(m as Plan)));
  const warmed = warm.tokens.map((t) => build(warm.baseUrl, t, warm.skipNegotiation));
  await Promise.all(warmed.map((c) => c.start()));
  await Promise.all(warmed.map((c) => c.stop()));
  process.send!({ type: 'warm' });
  const plan = await new Promise<Plan>((resolve) => process.once('message', (m) => resolve(m as Plan)));
  const handles: import('@microsoft/signalr').HubConnection[] = [];
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  const n = plan.tokens.length;
  const t0 = performance.now();
  const all: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const wait = t0 + (i * plan.spreadMs) / n - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const token = plan.tokens[i]!;
    const c = build(plan.baseUrl, token, plan.skipNegotiation);
    handles.push(c);
    const s = performance.now();
    all.push(
      c.start().then(
        () => void latencies.push(performance.now() - s),
        (err: unknown) => {
          const reason = String((err as Error)?.message ?? err).slice(0, Number(process.env.BENCH_REASON_CHARS ?? 80));
          failures[reason] = (failures[reason] ?? 0) + 1;
        },
      ),
    );
  }
  await Promise.all(all);
  const allMs = performance.now() - t0;
  latencies.sort((a, b) => a - b);
  process.send!({ type: 'done', connected: latencies.length, failures, allMs, latencies } satisfies Outcome);
  await new Promise((resolve) => process.once('message', resolve));
  await Promise.all(handles.map((c) => c.stop().catch(() => {})));
  process.exit(0);
}

const rssBytes = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
/** The redis-server listening on the backplane's port (the shared one the tests use). */
function redisPid(port: string): string | undefined {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.includes('redis-server') && cmd.includes(`:${port}`)) return pid;
    } catch {
      /* gone */
    }
  }
  return undefined;
}

async function seed(pool: import('pg').Pool, userIds: string[]): Promise<number> {
  const now = new Date();
  await pool.query(
    `insert into messenger.users (id, first_name, last_name, phone_number, is_active, identity_user_version, created_at, updated_at)
     select u, 'Storm', 'User', '+7900' || lpad(i::text, 7, '0'), true, 1, $2, $2 from unnest($1::uuid[]) with ordinality as t(u, i)`,
    [userIds, now],
  );
  // Group chats: GROUPS_PER_USER rounds, each a different shuffle of the users cut into chats of CHAT_SIZE.
  const chatIds: string[] = [];
  const kinds: string[] = [];
  const directKeys: (string | null)[] = [];
  const partChat: string[] = [];
  const partUser: string[] = [];
  for (let round = 0; round < GROUPS_PER_USER; round++) {
    const order = [...userIds].sort(() => Math.random() - 0.5);
    for (let c = 0; c < order.length; c += CHAT_SIZE) {
      const id = newId();
      chatIds.push(id);
      kinds.push('Group');
      directKeys.push(null);
      for (const u of order.slice(c, c + CHAT_SIZE)) partChat.push(id), partUser.push(u);
    }
  }
  // One Direct chat per pair of users: the peer who hears a presence flip.
  for (let i = 0; i + 1 < userIds.length; i += 2) {
    const id = newId();
    chatIds.push(id);
    kinds.push('Direct');
    directKeys.push([userIds[i]!, userIds[i + 1]!].sort().join(':'));
    partChat.push(id, id);
    partUser.push(userIds[i]!, userIds[i + 1]!);
  }
  await pool.query(
    `insert into messenger.chats (id, kind, title, direct_key, created_by_user_id, created_at, updated_at)
     select c, k, case when k = 'Group' then 'Storm chat' end, d, $4, $5, $5 from unnest($1::uuid[], $2::text[], $3::text[]) as t(c, k, d)`,
    [chatIds, kinds, directKeys, userIds[0], now],
  );
  await pool.query(
    `insert into messenger.chat_participants (id, chat_id, user_id, role, status, joined_at, accepted_at, updated_at)
     select gen_random_uuid(), c, u, 'Member', 'Active', $3, $3, $3 from unnest($1::uuid[], $2::uuid[]) as t(c, u)`,
    [partChat, partUser, now],
  );
  await pool.query('analyze');
  return chatIds.length;
}

async function main(): Promise<void> {
  const log = benchLogger('error');
  const pg = await startBenchPostgres(log, 'storm');
  const pool = createPool(pg.url, 20, log);
  await migrateDatabase(pool);
  const passed = Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(MESSENGER_|HUB_)/.test(k)));
  const config = loadConfig({
    HUB_MAX_CONNECTS_PER_SECOND: '1000000',
    HUB_MAX_CONNECTIONS: String(Math.max(10_000, CLIENTS * 2)),
    ...passed,
    ...(BACKPLANE ? { REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL } : {}),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'error',
    PORT: '0',
    JOBS_ENABLED: 'false',
    DATABASE_POOL_MAX: '20',
    KAFKA_BROKERS: '',
  });

  const userIds = Array.from({ length: CLIENTS + WARMUP }, () => newId());
  const chats = await seed(pool, userIds);
  say(`${CLIENTS} users, ${chats} chats (${GROUPS_PER_USER} groups of ${CHAT_SIZE} and one Direct chat per user)`);
  const tokens = await Promise.all(userIds.map((userId) => signToken({ userId, admin: false }, config.JWT_SECRET, { expiresIn: '2h' })));

  const app = await buildApp(config, { pool, databaseUrl: pg.url, log, modules: [messenger] });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const skipNegotiation = process.env.BENCH_SKIP_NEGOTIATION === '1';

  const clients: ChildProcess = fork(new URL(import.meta.url).pathname, ['clients'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      clients.once('message', (m) => resolve(m as T));
      clients.once('exit', (code) => reject(new Error(`client process exited (${code})`)));
    });
  // The warm-up users connect and leave before the window opens (they are not counted).
  const warmed = next<{ type: 'warm' }>();
  clients.send({ baseUrl, tokens: tokens.slice(CLIENTS), spreadMs: 0, skipNegotiation } satisfies Plan);
  await warmed;
  await new Promise((r) => setTimeout(r, 2000));
  const outcome = next<Outcome>();
  const pgMarker = `pin-storm-pg-${new URL(pg.url).port}`;
  const redis = BACKPLANE ? redisPid(new URL(REDIS_URL).port || '6379') : undefined;
  const rssBefore = rssBytes();
  const xactsBefore = await transactionsSoFar(pool);
  const profiler = await windowProfile(process.env.BENCH_CPU_PROFILE, 'storm window');
  const cpuBefore = cpuSnapshot(pgMarker);
  const elu = performance.eventLoopUtilization();
  const redisBefore = cpuSecondsOfPid(redis);
  const clientsBefore = cpuSecondsOfPid(clients.pid);
  say(`offering ${CLIENTS} connects within ${SPREAD_MS} ms (${skipNegotiation ? 'skipping negotiate' : 'negotiate, then WebSocket'})`);
  clients.send({ baseUrl, tokens: tokens.slice(0, CLIENTS), spreadMs: SPREAD_MS, skipNegotiation } satisfies Plan);
  const done = await outcome;
  await new Promise((r) => setTimeout(r, DRAIN_MS));
  const cpu = cpuShares(cpuBefore, cpuSnapshot(pgMarker), { server: String(process.pid) });
  const loopUtilization = performance.eventLoopUtilization(elu).utilization;
  const redisSeconds = cpuSecondsOfPid(redis) - redisBefore;
  const clientSeconds = cpuSecondsOfPid(clients.pid) - clientsBefore;
  await profiler?.stop();
  const transactions = (await transactionsSoFar(pool)) - xactsBefore - 1;
  say(`${done.connected} connected in ${Math.round(done.allMs)} ms; settling ${SETTLE_MS} ms`);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const rssAfter = rssBytes();
  const open = app.platform.hub.connectionCount();

  const perConnect = (coresOrSeconds: number, isCores = true) =>
    done.connected ? Math.round(((isCores ? coresOrSeconds * cpu.windowSeconds! : coresOrSeconds) * 1e6) / done.connected) / 1000 : null;
  const server = perConnect(cpu.server ?? 0);
  const result = {
    bench: 'connect-storm',
    target: 'hub',
    offered: CLIENTS,
    offeredWithinMs: SPREAD_MS,
    transport: skipNegotiation ? 'WebSockets, negotiate skipped' : 'negotiate, then WebSockets (the client default)',
    backplane: BACKPLANE ? 'redis' : 'in-process',
    connected: done.connected,
    openAfterSettle: open,
    failed: CLIENTS - done.connected,
    failures: done.failures,
    allConnectedMs: Math.round(done.allMs),
    acceptPerSec: Math.round((done.connected / done.allMs) * 1000),
    connectMs: { p50: percentile(done.latencies, 0.5), p95: percentile(done.latencies, 0.95), p99: percentile(done.latencies, 0.99), max: percentile(done.latencies, 1) },
    // Share of the window the server's event loop was busy: well below 1, the server waited for the clients.
    serverLoopUtilization: Math.round(loopUtilization * 100) / 100,
    // CPU of the storm window plus the drain, per connect (ms); server = the server's thread (kernel included).
    cpuWindowSeconds: cpu.windowSeconds,
    cpuMsPerConnect: {
      serverThread: server,
      ofWhichKernel: perConnect(cpu.kernelOfMainThread ?? 0),
      otherThreads: perConnect(cpu.otherThreads ?? 0),
      // What the peer's storm script reads for Centrifugo: every thread of the server process.
      serverProcess: perConnect((cpu.server ?? 0) + (cpu.otherThreads ?? 0)),
      postgres: perConnect(cpu.postgres ?? 0),
      ...(BACKPLANE ? { redisShared: perConnect(redisSeconds, false) } : {}),
      clientProcess: perConnect(clientSeconds, false),
    },
    // Round trips to PostgreSQL per connect (each statement outside a transaction block counts one).
    pgTransactionsPerConnect: done.connected ? Math.round((transactions / done.connected) * 100) / 100 : null,
    rssBeforeMiB: Math.round(rssBefore / 1048576),
    rssAfterMiB: Math.round(rssAfter / 1048576),
    rssPerConnKiB: done.connected ? Math.round((rssAfter - rssBefore) / done.connected / 102.4) / 10 : null,
    users: CLIENTS,
    chats,
    chatsPerUser: GROUPS_PER_USER + 1,
    postgres: pg.durability,
    machine: machine(),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  clients.removeAllListeners('exit');
  clients.send('stop');
  await new Promise((r) => clients.once('exit', r));
  await app.close();
  await pool.end();
  await pg.stop();
  process.exit(0);
}

if (process.argv[2] === 'clients') await runClients();
else await main();
