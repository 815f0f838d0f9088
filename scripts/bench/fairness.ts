/**
 * Fairness under one user's flood: can one user stall everyone else? `node scripts/bench/fairness.ts`.
 * Against a running service (BENCH_URL, its JWT secret in BENCH_JWT_SECRET, default the shipped
 * development secret), or, without BENCH_URL, against `node src/main.ts` it starts itself on
 * 127.0.0.1 with embedded PostgreSQL (Kafka when KAFKA_BROKERS is set, as `npm start`; logs on stderr).
 * Users are made the way the service allows: through the identity admin API (an admin token signed
 * with the secret), reaching the messenger through its user sync. A victim, who has a Direct chat
 * with a friend, reads `GET /api/messenger/chats` one request after another (BENCH_PAUSE_MS between),
 * at rest and then during each flood in turn, each flood one user's, from a process of its own:
 *   - negotiate: BENCH_NEGOTIATE_PARALLEL (8) loops of `POST /hubs/messenger/negotiate` as fast as
 *     answers come (the victim's own negotiate, once every 500 ms, is counted by status);
 *   - events: 50 (BENCH_EVENTS_PARALLEL) parallel loops of `GET /api/events?limit=500` over a stream
 *     with full pages (BENCH_EVENT_SENDERS (50) users sent 12 messages each into the reader's group);
 *   - groupSends: the owner of a group of BENCH_GROUP_SIZE (400) users, none of whom accepted it,
 *     sends to it at the send limit (BENCH_SENDS_PER_MINUTE, 300); the friend's direct message to the
 *     victim is sent 1 s in, and the time until it is in the victim's `GET /api/notifications` is
 *     reported (null past BENCH_NOTIFY_TIMEOUT_MS, 60 s; the flood goes on until then);
 *   - typing (last: the queries it queues can outlast it by minutes): one hub socket (SignalR JSON
 *     over WebSocket) sending BENCH_TYPING_PER_FRAME (500) Typing invocations in each frame every
 *     BENCH_TYPING_EVERY_MS (100), reconnecting when closed.
 * BENCH_FLOODS picks some (comma-separated names, in this order). Each window is BENCH_WINDOW_MS (10 s) after BENCH_FLOOD_WARMUP_MS (1 s) of flood; a victim's request
 * past BENCH_REQUEST_TIMEOUT_MS (20 s) counts as that long. After each flood the bench waits (at most
 * BENCH_SETTLE_MAX_MS, 60 s) until the victim is answered within the bound again: work a flood queued
 * can outlast it, and the next flood's figures should be its own. One JSON line: the victim's
 * p50/p95 (ms) at rest and during each flood, whether each stayed within max(3 × the p95 at rest,
 * 60 ms), the victim's non-200 answers, what the flood got, and how long the service took to settle.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { signToken } from '../../src/platform/http/auth.ts';
import { authSettings } from '../../src/platform/http/settings.ts';
import { newId } from '../../src/platform/time.ts';
import { floodProcess, type FloodPlan } from './fairness-floods.ts';
import { freePort, machine, say } from './support.ts';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const WINDOW_MS = env('BENCH_WINDOW_MS', 10_000);
const WARMUP_MS = env('BENCH_FLOOD_WARMUP_MS', 1000);
const PAUSE_MS = env('BENCH_PAUSE_MS', 20);
const GROUP_SIZE = env('BENCH_GROUP_SIZE', 400);
const EVENT_SENDERS = env('BENCH_EVENT_SENDERS', 50);
const SENDS_EACH = 12;
const SENDS_PER_MINUTE = env('BENCH_SENDS_PER_MINUTE', 300);
const NOTIFY_TIMEOUT_MS = env('BENCH_NOTIFY_TIMEOUT_MS', 60_000);
const BOUND_FLOOR_MS = 60;
/** A victim's request slower than this counts as this long, and as 'timeout'. */
const REQUEST_TIMEOUT_MS = env('BENCH_REQUEST_TIMEOUT_MS', 20_000);
/** After a flood, how long the victim may wait for the service to answer within the bound again before the next flood starts. */
const SETTLE_MAX_MS = env('BENCH_SETTLE_MAX_MS', 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? null : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! * 10) / 10);
type Counts = Record<string, number>;
const count = (counts: Counts, key: string | number) => void (counts[String(key)] = (counts[String(key)] ?? 0) + 1);

interface Service {
  baseUrl: string;
  secret: string;
  stop(): Promise<void>;
}

/** BENCH_URL's service, or `node src/main.ts` on embedded PostgreSQL, ready. */
async function service(): Promise<Service> {
  const secret = process.env.BENCH_JWT_SECRET ?? authSettings.JWT_SECRET.default;
  if (process.env.BENCH_URL) return { baseUrl: process.env.BENCH_URL.replace(/\/$/, ''), secret, stop: async () => {} };
  const port = await freePort();
  const dataDir = `/tmp/pin-fairness-pg-${port}`;
  const childEnv: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', PORT: String(port), EMBEDDED_PG_DATA_DIR: dataDir, JWT_SECRET: secret, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' };
  delete childEnv.DATABASE_URL;
  const child = spawn(process.execPath, ['src/main.ts'], { env: childEnv, stdio: ['ignore', 2, 2] });
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode})`);
    const ready = await fetch(`${baseUrl}/health/ready`).then((r) => r.status === 200, () => false);
    if (ready) break;
    if (Date.now() > deadline) throw new Error('the service was not ready within 180 s');
    await sleep(500);
  }
  say(`service ready at ${baseUrl} (embedded PostgreSQL in ${dataDir})`);
  return {
    baseUrl,
    secret,
    async stop() {
      // A service still busy with a flood's queued work gets its SHUTDOWN_TIMEOUT, then SIGKILL.
      const exited = child.exitCode === null ? new Promise((r) => child.once('exit', r)) : Promise.resolve();
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(killer);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function client(baseUrl: string) {
  return async (token: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
}
type Api = ReturnType<typeof client>;

/** Runs `fn` over `items`, `parallel` at a time. */
async function inParallel<T>(items: T[], parallel: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  }));
}

/** Asks until the answer is not `status` (the messenger has not seen a new user yet), for up to a minute. */
async function untilNot(status: number, call: () => Promise<{ status: number; json: any }>): Promise<{ status: number; json: any }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await call();
    if (res.status !== status || Date.now() > deadline) return res;
    await sleep(250);
  }
}

const expect = (res: { status: number; json: any }, statuses: number[], what: string) => {
  if (!statuses.includes(res.status)) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
};

interface World {
  tokens: { victim: string; friend: string; flooder: string; reader: string };
  floodChatId: string;
  friendChatId: string;
  readerCursor: string;
}

/** The users (identity admin API) and chats the floods need. */
async function seed(api: Api, secret: string): Promise<World> {
  const sign = (userId: string, admin = false) => signToken({ userId, admin }, secret, { expiresIn: '2h' });
  const admin = await sign(newId(), true);
  const ids = Array.from({ length: 4 + GROUP_SIZE + EVENT_SENDERS }, () => newId());
  const phoneBase = 1_000_000 + Math.floor(Math.random() * 8_000_000);
  say(`creating ${ids.length} users through the identity API`);
  await inParallel(ids, 8, async (id, i) => {
    const body = { id, name: { firstName: 'Fair', lastName: `User${i}` }, phoneNumber: `+7955${phoneBase + i}`, status: 'Active' };
    expect(await api(admin, 'POST', '/api/identity/users', body), [201], 'create user');
  });
  const [victim, friend, flooder, reader] = ids as [string, string, string, string];
  const members = ids.slice(4, 4 + GROUP_SIZE);
  const senders = ids.slice(4 + GROUP_SIZE);
  const tokens = { victim: await sign(victim), friend: await sign(friend), flooder: await sign(flooder), reader: await sign(reader) };
  const direct = (token: string, other: string) => untilNot(404, () => api(token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [other] }));
  const friendChatId = expect(await direct(tokens.friend, victim), [200, 201], 'direct chat').id as string;
  expect(await direct(tokens.victim, friend), [200, 201], 'the victim accepts the direct chat');
  const group = (token: string, memberUserIds: string[], title: string) => untilNot(404, () => api(token, 'POST', '/api/messenger/chats', { kind: 'Group', title, memberUserIds }));
  const floodChatId = expect(await group(tokens.flooder, members, 'Flooded'), [201], 'flood group').id as string;
  say(`group of ${members.length} made; ${senders.length} users fill the reader's stream with ${senders.length * SENDS_EACH} messages`);
  const readerCursor = expect(await api(tokens.reader, 'GET', '/api/events'), [200], 'stream head').next as string;
  const readersGroup = expect(await group(tokens.reader, senders, 'Read'), [201], 'reader group').id as string;
  await inParallel(senders, 8, async (sender) => {
    const token = await sign(sender);
    for (let i = 0; i < SENDS_EACH; i++) {
      expect(await api(token, 'POST', `/api/messenger/chats/${readersGroup}/messages`, { kind: 'Text', body: `fill ${i}` }), [201], 'fill send');
    }
  });
  return { tokens, floodChatId, friendChatId, readerCursor };
}

/** The victim's chat list, one request after another, for WINDOW_MS. */
async function sampleVictim(api: Api, token: string): Promise<{ p50: number | null; p95: number | null; max: number | null; samples: number; notOk: Counts }> {
  const ms: number[] = [];
  const notOk: Counts = {};
  const end = performance.now() + WINDOW_MS;
  while (performance.now() < end) {
    const t0 = performance.now();
    const res = await api(token, 'GET', '/api/messenger/chats').catch(() => ({ status: 'timeout', json: undefined }));
    ms.push(performance.now() - t0);
    if (res.status !== 200) count(notOk, res.status);
    await sleep(PAUSE_MS);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 0.5), p95: percentile(ms, 0.95), max: percentile(ms, 1), samples: ms.length, notOk };
}

function startFlood(plan: FloodPlan): { stop(): Promise<Counts> } {
  const child: ChildProcess = fork(new URL(import.meta.url).pathname, ['flood'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const done = new Promise<Counts>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { counts: Counts }).counts));
    child.once('exit', (code) => reject(new Error(`the ${plan.kind} flood exited (${code})`)));
  });
  child.send(plan);
  return {
    async stop() {
      child.send('stop');
      return done;
    },
  };
}

/**
 * After a flood: until three of the victim's requests in a row answer within `boundMs` (work the
 * flood queued may outlast it), at most SETTLE_MAX_MS, so the next flood's figures are its own.
 * The time it took is reported (null: not within SETTLE_MAX_MS).
 */
async function settle(api: Api, victim: string, boundMs: number): Promise<number | null> {
  const t0 = performance.now();
  let fast = 0;
  while (fast < 3) {
    if (performance.now() - t0 > SETTLE_MAX_MS) return null;
    const s = performance.now();
    const ok = await api(victim, 'GET', '/api/messenger/chats').then((r) => r.status === 200, () => false);
    fast = ok && performance.now() - s <= boundMs ? fast + 1 : 0;
    await sleep(PAUSE_MS);
  }
  return Math.round(performance.now() - t0);
}

/** The victim at rest (no plan) or during one flood, with what `alongside` measures meanwhile, then the settling. */
async function phase(api: Api, victim: string, boundMs: number, plan?: FloodPlan, alongside?: () => Promise<object>) {
  const flood = plan && startFlood(plan);
  if (flood) await sleep(WARMUP_MS);
  const [victimMs, extra] = await Promise.all([sampleVictim(api, victim), alongside?.() ?? Promise.resolve({})]);
  const floodCounts = await flood?.stop();
  const settledAfterMs = flood ? await settle(api, victim, boundMs) : undefined;
  return { ...victimMs, ...extra, ...(floodCounts ? { flood: floodCounts, settledAfterMs } : {}) };
}

/** The victim's own negotiates, one every 500 ms for the window, by status. */
async function victimNegotiates(api: Api, victim: string): Promise<object> {
  const statuses: Counts = {};
  const end = performance.now() + WARMUP_MS + WINDOW_MS;
  while (performance.now() < end) {
    count(statuses, (await api(victim, 'POST', '/hubs/messenger/negotiate?negotiateVersion=1')).status);
    await sleep(500);
  }
  return { victimNegotiate: statuses };
}

/** The friend's direct message 1 s in, and when it shows in the victim's notifications (null: not within NOTIFY_TIMEOUT_MS). */
async function notificationArrival(api: Api, world: World): Promise<object> {
  const newest = async () => (expect(await api(world.tokens.victim, 'GET', '/api/notifications?limit=1'), [200], 'notifications').items[0]?.id as string | undefined);
  const before = await newest();
  await sleep(1000);
  const sentAt = performance.now();
  expect(await api(world.tokens.friend, 'POST', `/api/messenger/chats/${world.friendChatId}/messages`, { kind: 'Text', body: 'unrelated' }), [201], 'direct message');
  while (performance.now() - sentAt < NOTIFY_TIMEOUT_MS) {
    if ((await newest()) !== before) return { notificationArrivalMs: Math.round(performance.now() - sentAt) };
    await sleep(100);
  }
  return { notificationArrivalMs: null };
}

async function main(): Promise<void> {
  const svc = await service();
  try {
    const api = client(svc.baseUrl);
    const world = await seed(api, svc.secret);
    const base = { baseUrl: svc.baseUrl };
    const { victim, flooder, reader } = world.tokens;
    say(`victim at rest for ${WINDOW_MS} ms`);
    const rest = await phase(api, victim, Infinity);
    const bound = Math.max(3 * (rest.p95 ?? 0), BOUND_FLOOR_MS);
    const floods: Record<string, object> = {};
    const chosen = (process.env.BENCH_FLOODS ?? 'negotiate,events,groupSends,typing').split(',');
    const during = async (name: string, plan: FloodPlan, alongside?: () => Promise<object>) => {
      if (!chosen.includes(name)) return;
      say(`flood: ${name}`);
      const result = await phase(api, victim, bound, plan, alongside);
      floods[name] = { ...result, withinBound: result.p95 !== null && result.p95 <= bound };
    };
    await during('negotiate', { ...base, kind: 'negotiate', token: flooder, parallel: env('BENCH_NEGOTIATE_PARALLEL', 8) }, () => victimNegotiates(api, victim));
    await during('events', { ...base, kind: 'events', token: reader, after: world.readerCursor, parallel: env('BENCH_EVENTS_PARALLEL', 50) });
    await during('groupSends', { ...base, kind: 'groupSends', token: flooder, chatId: world.floodChatId, sendsPerMinute: SENDS_PER_MINUTE }, () => notificationArrival(api, world));
    // Last: without a bound on hub invocations, the queries it queues outlast it by minutes.
    await during('typing', { ...base, kind: 'typing', token: flooder, chatId: world.floodChatId, perFrame: env('BENCH_TYPING_PER_FRAME', 500), frameEveryMs: env('BENCH_TYPING_EVERY_MS', 100) });
    const result = {
      bench: 'fairness',
      victimRoute: 'GET /api/messenger/chats',
      boundMs: bound,
      rest,
      floods,
      windowMs: WINDOW_MS,
      groupSize: GROUP_SIZE,
      sendsPerMinute: SENDS_PER_MINUTE,
      service: process.env.BENCH_URL ? 'BENCH_URL' : 'node src/main.ts, embedded PostgreSQL',
      machine: machine(),
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await svc.stop();
  }
}

if (process.argv[2] === 'flood') await floodProcess();
else await main();
