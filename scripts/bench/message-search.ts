/**
 * Message search over BENCH_MESSAGES (1,000,000) messages. `node scripts/bench/message-search.ts`
 * (no Kafka, no Redis). Starts its own embedded PostgreSQL, migrates it, writes BENCH_CHATS (20,000)
 * group chats of 2–7 members drawn from BENCH_USERS (5,000) users and the messages spread over them
 * (Russian and English words of a property chat, Zipf-like: a few words are in many messages, most in
 * few), ANALYZEs, then times searchMessages as the route calls it for BENCH_SEARCHES (300) searches
 * per shape by random members: a common word, a rare word, two words, a quoted phrase, a common word
 * within one of the caller's chats, and the second page of a common word. Prints ONE JSON line: p50/p95
 * ms per shape and overall (target: p95 ≤ 50 ms), hits per search, the index's size, and the load
 * average (two shared cores: the figures follow it). BENCH_PG_FAST=1 turns fsync off (the load is
 * written faster; the searches read the same).
 */
import { loadavg } from 'node:os';
import { createDb, createPool, migrateDatabase } from '../../src/platform/db/index.ts';
import { searchMessages } from '../../src/modules/messenger/messages/search.ts';
import { benchLogger, machine, say, startBenchPostgres } from './support.ts';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const MESSAGES = env('BENCH_MESSAGES', 1_000_000);
const CHATS = env('BENCH_CHATS', 20_000);
const USERS = env('BENCH_USERS', 5_000);
const SEARCHES = env('BENCH_SEARCHES', 300);
const log = benchLogger('warn');

// Words of a property chat; the first ones are drawn far more often than the last (power 3 below).
const WORDS = `квартира дом показ цена ключи договор ипотека осмотр комната балкон этаж ремонт метро парковка залог
  собственник агент сделка задаток аренда продажа кухня санузел окна вид двор лифт соседи район школа парк
  apartment viewing price keys contract mortgage deposit balcony parking floor renovation kitchen bathroom
  window elevator landlord tenant agent lease rent sale offer inspection furniture heating garden terrace
  студия пентхаус таунхаус новостройка вторичка застройщик нотариус регистрация выписка кадастр перепланировка`
  .split(/\s+/).filter(Boolean);
// Rare words: each in a handful of messages.
const RARE = Array.from({ length: 2000 }, (_, i) => `объект${i}`);

const pgServer = await startBenchPostgres(log, 'search');
const pool = createPool(pgServer.url, 4, log);
await migrateDatabase(pool);
const db = createDb(pool);

say(`writing ${CHATS} chats, ${USERS} users, ${MESSAGES} messages`);
const t0 = performance.now();
// The load runs on one connection without the pool's statement timeout (a 100,000-row batch outlasts it).
const load = await pool.connect();
await load.query('set statement_timeout = 0');
await load.query(`create temp table bench_users as select gen_random_uuid() as id, n from generate_series(1, $1::int) n`, [USERS]);
await load.query(
  `insert into messenger.chats (id, kind, title, created_by_user_id, last_seq, created_at, updated_at)
   select gen_random_uuid(), 'Group', 'chat ' || n, (select id from bench_users where n = 1), ceil($2::float8 / $1), now() - interval '400 days', now()
     from generate_series(1, $1::int) n`,
  [CHATS, MESSAGES],
);
// Members: 2–7 distinct users per chat, joined when the chat was made.
await load.query(
  `insert into messenger.chat_participants (id, chat_id, user_id, role, status, joined_at, accepted_at, updated_at)
   select gen_random_uuid(), c.id, u.id, 'Member', 'Active', c.created_at, c.created_at, now()
     from messenger.chats c
     cross join lateral (select distinct 1 + floor(random() * $1)::int as n from generate_series(1, 2 + (abs(hashtext(c.id::text)) % 6))) pick
     join bench_users u on u.n = pick.n`,
  [USERS],
);
await load.query(`create temp table bench_chats as select id, created_by_user_id as creator, row_number() over () as n from messenger.chats`);
await load.query('create unique index on bench_chats (n)');
await load.query('select set_config($1, $2, false)', ['bench.words', WORDS.join(' ')]);
const perBatch = 100_000;
for (let done = 0; done < MESSAGES; done += perBatch) {
  const n = Math.min(perBatch, MESSAGES - done);
  await load.query(
    `with w as (select string_to_array(current_setting('bench.words'), ' ') as words)
     insert into messenger.messages (id, chat_id, seq, sender_user_id, kind, body, sent_at)
     select gen_random_uuid(), c.id, g + $1::int, c.creator, 'Text',
            -- k in the argument keeps the aggregate this subquery's own (with outer columns only it would be the outer query's).
            (select string_agg(w.words[1 + floor(power(random(), 3) * array_length(w.words, 1))::int + 0 * k], ' ')
               from generate_series(1, 6 + g % 9) k)
            || case when g % 97 = 0 then ' объект' || (g % 2000) else '' end,
            now() - interval '300 days' + (g + $1::int) * interval '20 seconds'
       from generate_series(1, $2::int) g
       join bench_chats c on c.n = 1 + ((g + $1::int) % $3::int)
       cross join w`,
    [done, n, CHATS],
  );
  say(`  ${done + n} messages`);
}
await load.query('analyze');
load.release();
const writeS = (performance.now() - t0) / 1000;
const { rows: [size] } = await pool.query<{ index: string; table: string }>(
  `select pg_size_pretty(pg_relation_size('messenger.ix_messages_search')) as index, pg_size_pretty(pg_relation_size('messenger.messages')) as table`,
);
say(`written in ${writeS.toFixed(0)} s; index ${size?.index}, table ${size?.table}`);

const { rows: members } = await pool.query<{ userId: string; chatId: string }>(
  `select user_id as "userId", chat_id as "chatId" from messenger.chat_participants order by random() limit $1`, [SEARCHES],
);
const common = WORDS.slice(0, 8);
const pick = <T>(xs: T[], i: number): T => xs[i % xs.length]!;
/** A shape makes its search (untimed: e.g. fetching the first page whose cursor it follows) and returns it to be timed. */
type Shape = (i: number, m: { userId: string; chatId: string }) => Promise<() => Promise<number>>;
const principal = (userId: string) => ({ userId, admin: false }) as never;
const run = (userId: string, p: { text: string; chatId?: string; cursor?: string }) => async () =>
  (await searchMessages(db, principal(userId), { limit: 20, ...p })).items.length;
const shapes: Record<string, Shape> = {
  commonWord: async (i, m) => run(m.userId, { text: pick(common, i) }),
  rareWord: async (i, m) => run(m.userId, { text: `объект${(i * 7) % 2000}` }),
  twoWords: async (i, m) => run(m.userId, { text: `${pick(WORDS, i)} ${pick(WORDS, i + 5)}` }),
  phrase: async (i, m) => run(m.userId, { text: `"${pick(common, i)} ${pick(common, i + 1)}"` }),
  oneChat: async (i, m) => run(m.userId, { text: pick(common, i), chatId: m.chatId }),
  secondPage: async (i, m) => {
    const text = pick(common, i + 3);
    const first = await searchMessages(db, principal(m.userId), { limit: 20, text });
    return run(m.userId, { text, ...(first.nextCursor ? { cursor: first.nextCursor } : {}) });
  },
};

const pct = (xs: number[], p: number) => Number([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!.toFixed(2));
const results: Record<string, { p50: number; p95: number; hitsPerSearch: number }> = {};
const all: number[] = [];
// Warm the cache as a live database is: one pass of each shape untimed.
for (const shape of Object.values(shapes)) for (let i = 0; i < 20; i++) await (await shape(i, members[i % members.length]!))();
for (const [name, shape] of Object.entries(shapes)) {
  const times: number[] = [];
  let hits = 0;
  for (let i = 0; i < members.length; i++) {
    const search = await shape(i, members[i]!);
    const start = performance.now();
    hits += await search();
    times.push(performance.now() - start);
  }
  all.push(...times);
  results[name] = { p50: pct(times, 0.5), p95: pct(times, 0.95), hitsPerSearch: Number((hits / members.length).toFixed(1)) };
  say(`${name}: p50 ${results[name].p50} ms, p95 ${results[name].p95} ms`);
}

process.stdout.write(`${JSON.stringify({
  bench: 'message-search',
  messages: MESSAGES,
  chats: CHATS,
  users: USERS,
  searchesPerShape: members.length,
  ms: { p50: pct(all, 0.5), p95: pct(all, 0.95) },
  shapes: results,
  target: { p95Ms: 50, met: pct(all, 0.95) <= 50 },
  index: size,
  writeSeconds: Number(writeS.toFixed(1)),
  durability: pgServer.durability,
  loadAvg: loadavg().map((x) => Number(x.toFixed(2))),
  machine: machine(),
})}\n`);
await pool.end();
await pgServer.stop();
