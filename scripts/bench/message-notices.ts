/**
 * The offline path's write for one message. `node scripts/bench/message-notices.ts` (no Kafka, no
 * Redis: the consumer's two statements, called as its handler calls them, inside a transaction each).
 * Starts its own embedded PostgreSQL, gives BENCH_RECIPIENTS users one push token each, then for
 * BENCH_MESSAGES messages of fresh chats (every recipient notified) times the read that picks the
 * recipients (noticeCandidates) and the one statement that writes the notices, in-app copies and
 * pushes (writeMessageNotices), then the same for messages that fold (the window holds them: the read
 * only). Prints ONE JSON line: p50/p95 ms per message (target: well under 50 ms for 400 recipients).
 * Settings: BENCH_RECIPIENTS (400), BENCH_MESSAGES (50), BENCH_TOKENS (1 push token per recipient; 0:
 * in-app copies only), BENCH_PG_FAST=1 (fsync off, as the tests run). The line carries the machine's
 * load average: on two shared cores the figures follow it.
 */
import { loadavg } from 'node:os';
import { createDb, createPool, migrateDatabase, type Db } from '../../src/platform/db/index.ts';
import { newId } from '../../src/platform/time.ts';
import { noticeCandidates, writeMessageNotices, type NoticeScope } from '../../src/modules/notifications/chat-notices.ts';
import { benchLogger, machine, say, startBenchPostgres } from './support.ts';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const RECIPIENTS = env('BENCH_RECIPIENTS', 400);
const MESSAGES = env('BENCH_MESSAGES', 50);
const TOKENS = env('BENCH_TOKENS', 1);
const log = benchLogger('warn');

const pgServer = await startBenchPostgres(log, 'bench', { statements: true });
const pool = createPool(pgServer.url, 4, log);
await migrateDatabase(pool);
const db = createDb(pool);
const users = Array.from({ length: RECIPIENTS }, () => newId());
await pool.query(
  `insert into notifications.push_tokens (token, user_id, platform, created_at, updated_at)
   select 'device-' || u || '-' || i, u, 'ios', now(), now() from unnest($1::uuid[]) u, generate_series(1, $2::int) i`,
  [users, TOKENS],
);
await pool.query('create extension if not exists pg_stat_statements');
await pool.query('select pg_stat_statements_reset()');
const recipients = users.map((userId) => ({ userId, request: false }));

/** One message as the consumer handles it: the read, then the write of whoever the read let through. */
async function handle(tx: Db, scope: NoticeScope): Promise<{ readMs: number; writeMs: number; rows: number }> {
  const t0 = performance.now();
  const candidates = await noticeCandidates(tx, scope, recipients);
  const t1 = performance.now();
  const notice = { title: 'New message', data: { ChatId: scope.chatId }, correlationId: null, sourcePrefix: `message-posted:${newId()}`, now: new Date() };
  const written = await writeMessageNotices(tx, scope, notice, candidates);
  return { readMs: t1 - t0, writeMs: performance.now() - t1, rows: written.reduce((n, w) => n + w.rows, 0) };
}

const pct = (xs: number[], p: number) => Number([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!.toFixed(2));
const sentAt = new Date();
const fresh: { readMs: number; writeMs: number; rows: number }[] = [];
const chats: string[] = [];
say(`${MESSAGES} messages to ${RECIPIENTS} recipients each, every one notified`);
for (let i = 0; i < MESSAGES; i++) {
  const chatId = newId();
  chats.push(chatId);
  fresh.push(await db.transaction((tx) => handle(tx, { chatId, sentAt, windowMs: 60_000 })));
}
// Statements that wrote notification rows, per message: one (the write), however many recipients.
const { rows: writes } = await pool.query<{ calls: string }>(
  `select coalesce(sum(calls), 0) as calls from pg_stat_statements where query ilike '%insert into notifications.notifications%'`,
);
say('the same chats again within the window: every recipient folds');
const folded: { readMs: number; writeMs: number; rows: number }[] = [];
for (const chatId of chats) folded.push(await db.transaction((tx) => handle(tx, { chatId, sentAt: new Date(sentAt.getTime() + 1000), windowMs: 60_000 })));

await pool.end();
await pgServer.stop();
console.log(
  JSON.stringify({
    bench: 'message-notices',
    machine: machine(),
    loadAverage1m: Number(loadavg()[0]!.toFixed(1)),
    postgres: { durability: pgServer.durability },
    recipients: RECIPIENTS,
    tokensPerRecipient: TOKENS,
    messages: MESSAGES,
    rowsPerMessage: fresh[0]!.rows,
    insertStatementsPerMessage: Number(writes[0]!.calls) / MESSAGES,
    notifiedMs: { readP50: pct(fresh.map((x) => x.readMs), 0.5), writeP50: pct(fresh.map((x) => x.writeMs), 0.5), writeP95: pct(fresh.map((x) => x.writeMs), 0.95) },
    foldedMs: { readP50: pct(folded.map((x) => x.readMs), 0.5), readP95: pct(folded.map((x) => x.readMs), 0.95), rows: folded.reduce((n, x) => n + x.rows, 0) },
    target: { writeMs: 50 },
  }),
);
process.exit(0);
