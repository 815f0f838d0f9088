/**
 * Realtime benchmark (seed 000, persist → push). `node scripts/bench/realtime.ts`. Starts its own
 * embedded PostgreSQL and the service (messenger module, jobs on: RealtimeDispatchJob woken by
 * NOTIFY, in-process hub and event bus), then:
 *   - 1,000 official @microsoft/signalr clients (a child process) in 100 group chats of 10;
 *   - 1,000 messages/s sent through REST for 30 s (another child process), each to a random chat
 *     from one of its members, so every message is 10 deliveries (the sender's own sockets too);
 *   - lag = received (client wall clock) − SentAt (= the realtime_outbox row's CreatedAt, same
 *     transaction), p50/p95/p99 over every delivery; frames delivered per second; lost deliveries
 *     (expected − distinct received) and duplicates. A send's wait before its statement starts
 *     (coalescing, pool) is in restLatencyMs, not in the lag: the row does not exist yet;
 *     restInServerMs times the same sends inside the server (headers parsed → answer written).
 *   - where the machine's CPU went over the send window and the drain (cpuCores, cpuUsPerMessage:
 *     the server's thread — user and kernel time, ofWhichKernel its kernel part —, the other threads
 *     of the server's process — V8 and libuv helpers —, PostgreSQL, and their total; cpuCores also
 *     the clients' and senders' processes; loadGeneratorUsPerMessage the same two per message),
 *     statements per message (pgTransactionsPerMessage)
 *     and how late the server's event loop ran (serverLoopDelayMs): the clients, the senders and
 *     PostgreSQL share the machine's cores with the server;
 *   - where a message's time went inside the server (`phasesMs`, phases.ts): its wait for a send
 *     statement, the statement with its commit, written → claimed, the claim and the push;
 *   - what PostgreSQL did per message over the same window (`pg`, pg-stats.ts): statements by total
 *     time, WAL bytes, rows written and dead tuples per table, the rows retention will delete later;
 *   - the sustained rate at the offered one (`sustained`): sends accepted per second until the last
 *     answer, messages delivered per second from the first frame to the last.
 * Prints ONE JSON line on stdout (progress on stderr). The seed's SLO is p95 < 1 s; target p95 < 50 ms.
 * Settings: BENCH_CLIENTS (1000), BENCH_CHAT_SIZE (10), BENCH_RATE (1000), BENCH_SECONDS (30),
 * BENCH_PG_FAST=1 (fsync off), BENCH_LOG_LEVEL (error), BENCH_CONNECT=0 (no clients: REST and dispatch alone),
 * BENCH_CONNECTIONS (64 keep-alive HTTP connections for the senders),
 * BENCH_CPU_PROFILE=<file> (a CPU profile of the server's thread over the send window and the drain only);
 * MESSENGER_* and HUB_* settings are taken from the environment (e.g. MESSENGER_REALTIME_BATCH_SIZE);
 * BENCH_SEND_MIN_INTERVAL_MS overrides the messenger's sendMinIntervalMs tuning (the spacing of a
 * steady stream's send statements: latency against CPU per message).
 */
import http from 'node:http';
import type pg from 'pg';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fork, type ChildProcess } from 'node:child_process';
import { HttpTransportType, HubConnectionBuilder, LogLevel, type HubConnection } from '@microsoft/signalr';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createPool, migrateDatabase } from '../../src/platform/db/index.ts';
import { signToken } from '../../src/platform/http/auth.ts';
import { newId } from '../../src/platform/time.ts';
import { messengerModule } from '../../src/modules/messenger/index.ts';
import { cpuSecondsOfPid, cpuShares, cpuSnapshot } from './cpu-shares.ts';
import { pgSnapshot, pgWindowReport } from './pg-stats.ts';
import { collectPhases } from './phases.ts';
import { benchLogger, machine, say, startBenchPostgres, transactionsSoFar, windowProfile } from './support.ts';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const CLIENTS = env('BENCH_CLIENTS', 1000);
const CHAT_SIZE = env('BENCH_CHAT_SIZE', 10);
const RATE = env('BENCH_RATE', 1000);
const SECONDS = env('BENCH_SECONDS', 30);
const nowMs = () => performance.timeOrigin + performance.now();

/** The messenger's tuning the bench runs with: its own, or BENCH_SEND_MIN_INTERVAL_MS's spacing. */
const sendTuning = () => (process.env.BENCH_SEND_MIN_INTERVAL_MS === undefined ? {} : { sendMinIntervalMs: env('BENCH_SEND_MIN_INTERVAL_MS', 10) });

interface Plan {
  baseUrl: string;
  users: { id: string; token: string }[];
  chats: { id: string; members: number[] }[];
}

const percentile = (sorted: Float64Array | number[], p: number) => (sorted.length === 0 ? null : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! * 10) / 10);

/** Child process: every client connected, recording (message, lag) for each message_received. */
async function runClients(plan: Plan): Promise<void> {
  const lags: number[] = [];
  const seen = new Set<string>();
  let frames = 0;
  let duplicates = 0;
  let firstAt = 0;
  let lastAt = 0;
  const connections: HubConnection[] = [];
  const connect = async (i: number) => {
    const { token } = plan.users[i]!;
    const c = new HubConnectionBuilder()
      .withUrl(`${plan.baseUrl}/hubs/messenger`, { accessTokenFactory: () => token, transport: HttpTransportType.WebSockets, skipNegotiation: true })
      .configureLogging(LogLevel.None)
      .build();
    c.on('message_received', (p: { MessageId: string; SentAt: string }) => {
      const at = nowMs();
      frames++;
      firstAt ||= at;
      lastAt = at;
      const key = `${i}:${p.MessageId}`;
      if (seen.has(key)) return void duplicates++;
      seen.add(key);
      lags.push(at - Date.parse(p.SentAt));
    });
    await c.start();
    connections.push(c);
  };
  const connecting = process.env.BENCH_CONNECT === '0' ? 0 : plan.users.length; // 0: REST and dispatch only (diagnosis)
  for (let i = 0; i < connecting; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, connecting - i) }, (_, j) => connect(i + j)));
  }
  process.send!({ type: 'connected', count: connections.length });
  await nextMessage('report');
  const sorted = Float64Array.from(lags).sort();
  // Written out before this process exits (the lags are megabytes: more than the pipe holds).
  await new Promise((resolve) => process.send!({ type: 'stats', delivered: seen.size, frames, duplicates, firstAt, lastAt, lags: sorted }, undefined, {}, resolve));
  await Promise.all(connections.map((c) => c.stop()));
}

/**
 * Child process: RATE messages/s for SECONDS through REST (once told to go), each from a random member of a random chat, over
 * a bounded set of keep-alive connections (as a load balancer holds them); a request waiting for a
 * free connection counts in its latency.
 */
async function runSenders(plan: Plan): Promise<void> {
  const url = new URL(plan.baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number(process.env.BENCH_CONNECTIONS ?? 64) });
  const post = (path: string, token: string, body: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: url.hostname, port: url.port, path, method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  process.send!({ type: 'ready' });
  await nextMessage('go');
  const total = RATE * SECONDS;
  const requestMs: number[] = [];
  let ok = 0;
  let failed = 0;
  const inflight: Promise<void>[] = [];
  const started = performance.now();
  let issued = 0;
  while (issued < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * RATE) + 1);
    while (issued < due) {
      const i = issued++;
      const chat = plan.chats[i % plan.chats.length]!;
      const sender = plan.users[chat.members[Math.floor(Math.random() * chat.members.length)]!]!;
      const t0 = performance.now();
      inflight.push(
        post(`/api/messenger/chats/${chat.id}/messages`, sender.token, JSON.stringify({ kind: 'Text', body: `bench message ${i}` })).then(
          (status) => {
            if (status === 201) ok++;
            else failed++;
            requestMs.push(performance.now() - t0);
          },
          () => void failed++,
        ),
      );
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  await Promise.all(inflight);
  requestMs.sort((a, b) => a - b);
  process.send!({
    type: 'sent',
    ok,
    failed,
    seconds: (performance.now() - started) / 1000,
    restP50: percentile(requestMs, 0.5),
    restP95: percentile(requestMs, 0.95),
  });
  // Alive until killed (listening for the parent keeps it so; nothing is ever sent), so the parent
  // reads this process's CPU over the whole window from /proc.
  await nextMessage('never');
}

/** Either end of the IPC channel: the child's `process`, or the parent's handle of the child. */
type MessagePeer = Pick<ChildProcess, 'on' | 'off'>;

/** The next message of `type` from the other end (the parent's, by default: in a child process). */
const nextMessage = <T>(type: string, from: MessagePeer = process as unknown as MessagePeer) =>
  new Promise<T>((resolve) => {
    const on = (m: { type: string }) => {
      if (m.type !== type) return;
      from.off('message', on);
      resolve(m as T);
    };
    from.on('message', on);
  });

/**
 * A load generator in its own process (this file, `role` as its argument), given the plan. Not a
 * worker thread: the server's process would then count the generator's garbage collection among
 * its own other threads (V8's helper threads serve every isolate of a process).
 */
function loadGenerator(role: 'clients' | 'senders', plan: Plan): ChildProcess {
  const child = fork(new URL(import.meta.url).pathname, [role], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'advanced' });
  child.on('exit', (code, signal) => {
    if (code === 0 || signal === 'SIGTERM') return;
    say(`${role} process failed (${code ?? signal})`);
    process.exit(1);
  });
  child.send({ type: 'plan', plan });
  return child;
}

async function main(): Promise<void> {
  const log = benchLogger('error');
  const pg = await startBenchPostgres(log, 'realtime', { statements: true });
  const pool = createPool(pg.url, 20, log);
  await migrateDatabase(pool);
  await pool.query('create extension if not exists pg_stat_statements');
  // MESSENGER_* and HUB_* settings pass through from the environment, to try other values.
  const tuning = Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(MESSENGER_|HUB_)/.test(k)));
  const config = loadConfig({ ...tuning, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'error', PORT: '0', JOBS_ENABLED: 'true', DATABASE_POOL_MAX: '20', KAFKA_BROKERS: '' });

  say(`${CLIENTS} users in ${CLIENTS / CHAT_SIZE} chats of ${CHAT_SIZE}`);
  const now = new Date();
  const users = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const id = newId();
      return { id, token: await signToken({ userId: id, admin: false }, config.JWT_SECRET, { expiresIn: '2h' }) };
    }),
  );
  await pool.query(
    `insert into messenger.users (id, first_name, last_name, phone_number, is_active, identity_user_version, created_at, updated_at)
     select u, 'Bench', 'User', '+7900' || lpad(i::text, 7, '0'), true, 1, $2, $2 from unnest($1::uuid[]) with ordinality as t(u, i)`,
    [users.map((u) => u.id), now],
  );
  const chats: Plan['chats'] = [];
  for (let c = 0; c < CLIENTS / CHAT_SIZE; c++) {
    const id = newId();
    const members = Array.from({ length: CHAT_SIZE }, (_, k) => c * CHAT_SIZE + k);
    chats.push({ id, members });
    await pool.query(
      `insert into messenger.chats (id, kind, title, created_by_user_id, created_at, updated_at) values ($1, 'Group', 'Bench chat', $2, $3, $3)`,
      [id, users[members[0]!]!.id, now],
    );
    // Members who took part before (accepted_at set): a chat in use, not a message request each
    // member's first send would accept.
    await pool.query(
      `insert into messenger.chat_participants (id, chat_id, user_id, role, status, joined_at, accepted_at, updated_at)
       select gen_random_uuid(), $1, u, case when o = 1 then 'Owner' else 'Member' end, 'Active', $3, $3, $3 from unnest($2::uuid[]) with ordinality as t(u, o)`,
      [id, members.map((k) => users[k]!.id), now],
    );
  }

  const app = await buildApp(config, { pool, databaseUrl: pg.url, log, modules: [messengerModule(sendTuning())] });
  // The sends timed inside the server too, from the request's headers parsed to the answer's last
  // byte handed to the kernel: what restLatencyMs adds on top of this is the senders' side and the sockets.
  const serverSendMs: number[] = [];
  app.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/messages')) return;
    const t0 = performance.now();
    res.once('finish', () => serverSendMs.push(performance.now() - t0));
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  await app.platform.startBackground();
  const plan: Plan = { baseUrl: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, users, chats };

  say('connecting clients');
  const clients = loadGenerator('clients', plan);
  const senders = loadGenerator('senders', plan);
  // Listening before either can answer: a child's message nobody listens for is gone.
  const [connected] = await Promise.all([nextMessage<{ count: number }>('connected', clients), nextMessage('ready', senders)]);
  say(`${connected.count} clients connected; sending ${RATE}/s for ${SECONDS} s`);
  const profiler = await windowProfile(process.env.BENCH_CPU_PROFILE, 'send window');
  const pgMarker = `pin-realtime-pg-${new URL(pg.url).port}`;
  const cpuBefore = cpuSnapshot(pgMarker);
  const generatorsBefore = { clients: cpuSecondsOfPid(clients.pid), senders: cpuSecondsOfPid(senders.pid) };
  const xactsBefore = await transactionsSoFar(pool);
  const pgBefore = await pgSnapshot(pool);
  const phases = collectPhases();
  const elu = performance.eventLoopUtilization();
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  const sending = nextMessage<{ ok: number; failed: number; seconds: number; restP50: number; restP95: number }>('sent', senders);
  senders.send({ type: 'go' });
  const sent = await sending;
  const loopUtilization = performance.eventLoopUtilization(elu).utilization;
  loopDelay.disable();
  // Let the last pushes land: wait until nothing is Pending (or 15 s).
  const deadline = performance.now() + 15_000;
  while (performance.now() < deadline) {
    const { rows } = await pool.query<{ n: number }>(`select count(*)::int as n from push.realtime_outbox where status = 'Pending'`);
    if (rows[0]!.n === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 500));
  await profiler?.stop();
  const cpu = cpuShares(
    cpuBefore,
    cpuSnapshot(pgMarker),
    { server: String(process.pid) },
    { clients: cpuSecondsOfPid(clients.pid) - generatorsBefore.clients, senders: cpuSecondsOfPid(senders.pid) - generatorsBefore.senders },
  );
  const transactions = (await transactionsSoFar(pool)) - xactsBefore - 1;
  // Other backends flush their table counters at most once a second.
  await new Promise((r) => setTimeout(r, 1100));
  const pgAfter = await pgSnapshot(pool);
  serverSendMs.sort((a, b) => a - b);
  clients.send({ type: 'report' });
  const stats = await nextMessage<{ delivered: number; frames: number; duplicates: number; firstAt: number; lastAt: number; lags: Float64Array }>('stats', clients);
  const { rows: outbox } = await pool.query<{ status: string; n: number }>(`select status, count(*)::int as n from push.realtime_outbox group by status`);
  const metric = async (name: string, labels: Record<string, string> = {}) => {
    const values = ((await app.platform.registry.getSingleMetric(name)?.get())?.values ?? []) as { labels: Record<string, string>; value: number; metricName?: string }[];
    return values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).filter((v) => !v.metricName || v.metricName === name || v.metricName === `${name}_sum` || v.metricName === `${name}_count`);
  };
  const runs = (await metric('job_runs_total', { job: 'messenger-realtime-dispatch', outcome: 'success' })).reduce((a, v) => a + v.value, 0);
  const runSeconds = (await metric('job_run_duration_seconds', { job: 'messenger-realtime-dispatch' })).find((v) => v.metricName?.endsWith('_sum'))?.value ?? 0;

  const expected = sent.ok * CHAT_SIZE;
  /** Cores busy over the window, as µs of CPU per message sent. */
  const usPerMessage = (cores = 0) => (sent.ok ? Math.round((cores * cpu.windowSeconds! * 1e6) / sent.ok) : null);
  const windowSeconds = Math.max(0.001, (stats.lastAt - stats.firstAt) / 1000);
  const result = {
    bench: 'realtime',
    clients: connected.count,
    chats: chats.length,
    chatSize: CHAT_SIZE,
    rate: RATE,
    seconds: SECONDS,
    ...(process.env.BENCH_SEND_MIN_INTERVAL_MS === undefined ? {} : { sendMinIntervalMs: sendTuning().sendMinIntervalMs }),
    sent: sent.ok,
    sendFailures: sent.failed,
    sendSeconds: Math.round(sent.seconds * 100) / 100,
    // What the service kept up with at the offered rate: answers queue and frames fall behind past it.
    sustained: {
      offeredPerSecond: RATE,
      acceptedPerSecond: Math.round(sent.ok / sent.seconds),
      deliveredPerSecond: Math.round(stats.delivered / CHAT_SIZE / windowSeconds),
    },
    restLatencyMs: { p50: sent.restP50, p95: sent.restP95 },
    restInServerMs: { p50: percentile(serverSendMs, 0.5), p95: percentile(serverSendMs, 0.95) },
    // Inside the server, per message: where the send's and the push's time went (phases.ts).
    phasesMs: phases.report(),
    deliveriesExpected: expected,
    delivered: stats.delivered,
    lost: expected - stats.delivered,
    duplicates: stats.duplicates,
    lagMs: { p50: percentile(stats.lags, 0.5), p95: percentile(stats.lags, 0.95), p99: percentile(stats.lags, 0.99), max: percentile(stats.lags, 1) },
    framesPerSecond: Math.round(stats.frames / windowSeconds),
    serverLoopUtilization: Math.round(loopUtilization * 100) / 100,
    // How late the server's event loop ran a 1 ms timer while sending: what every I/O callback waits on top.
    serverLoopDelayMs: { p50: Math.round(loopDelay.percentile(50) / 1e4) / 100, p99: Math.round(loopDelay.percentile(99) / 1e4) / 100, max: Math.round(loopDelay.max / 1e4) / 100 },
    // Cores busy on average over the send window and the drain, by who used them.
    cpuCores: cpu,
    // Every statement outside a transaction block counts as one: round trips to PostgreSQL per message.
    pgTransactionsPerMessage: sent.ok ? Math.round((transactions / sent.ok) * 100) / 100 : null,
    // The server's thread counts its kernel time (ofWhichKernel is that part: never add it again);
    // total = the server's process (what the peer's figure counts) + PostgreSQL.
    cpuUsPerMessage: {
      serverThread: usPerMessage(cpu.server),
      ofWhichKernel: usPerMessage(cpu.kernelOfMainThread),
      otherThreads: usPerMessage(cpu.otherThreads),
      postgres: usPerMessage(cpu.postgres),
      total: usPerMessage((cpu.server ?? 0) + (cpu.otherThreads ?? 0) + (cpu.postgres ?? 0)),
    },
    // The load generators' own CPU per message, on the same cores: at R messages a second they alone
    // keep R × (clients + senders) µs of the machine busy each second, whatever the server costs.
    loadGeneratorUsPerMessage: { clients: usPerMessage(cpu.clients), senders: usPerMessage(cpu.senders) },
    pg: await pgWindowReport(pool, pgBefore, pgAfter, sent.ok),
    dispatcher: { runs, rowsPerRun: runs ? Math.round((sent.ok / runs) * 10) / 10 : null, msPerRun: runs ? Math.round((runSeconds / runs) * 10000) / 10 : null },
    outbox: Object.fromEntries(outbox.map((r) => [r.status, r.n])),
    postgres: pg.durability,
    machine: machine(),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  senders.kill();
  clients.kill();
  await app.close();
  await pool.end();
  await pg.stop();
  process.exit(0);
}

const role = process.argv[2];
if (role === 'clients' || role === 'senders') {
  const { plan } = await nextMessage<{ plan: Plan }>('plan');
  await (role === 'clients' ? runClients(plan) : runSenders(plan));
  process.exit(0);
} else {
  await main();
}
