/**
 * What PostgreSQL did over a bench window, read from its own statistics: statements by text
 * (pg_stat_statements, which startBenchPostgres preloads on request), WAL written (pg_stat_wal and
 * the insert LSN), and per table the rows written, how many updates were HOT (no index entries
 * written), the dead tuples left for vacuum and the indexes every insert maintains. Work moved out
 * of the window (retention deletes, vacuum) shows as rows and dead tuples left behind, so a change
 * that only defers work cannot pass for one that removes it.
 */
import type pg from 'pg';

interface Statement {
  query: string;
  calls: number;
  ms: number;
  rows: number;
  walBytes: number;
}

interface TableStats {
  ins: number;
  upd: number;
  hot: number;
  del: number;
  dead: number;
}

export interface PgSnapshot {
  statements: Map<string, Statement>;
  lsn: string;
  wal: { records: number; fpi: number; bytes: number };
  tables: Map<string, TableStats>;
}

/** Rows PostgreSQL's own counters lag by up to a second; this flushes this backend's first. */
export async function pgSnapshot(pool: pg.Pool): Promise<PgSnapshot> {
  await pool.query('select pg_stat_force_next_flush()');
  const statements = new Map<string, Statement>();
  const { rows: st } = await pool.query<{ id: string; query: string; calls: string; ms: number; rows: string; wal: string }>(
    `select queryid::text as id, query, calls, total_exec_time as ms, rows, wal_bytes::text as wal
       from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())`,
  );
  for (const r of st) statements.set(r.id, { query: r.query, calls: Number(r.calls), ms: r.ms, rows: Number(r.rows), walBytes: Number(r.wal) });
  const { rows: w } = await pool.query<{ lsn: string; records: string; fpi: string; bytes: string }>(
    `select pg_current_wal_insert_lsn()::text as lsn, wal_records as records, wal_fpi as fpi, wal_bytes::text as bytes from pg_stat_wal`,
  );
  const tables = new Map<string, TableStats>();
  const { rows: t } = await pool.query<{ name: string; ins: string; upd: string; hot: string; del: string; dead: string }>(
    `select schemaname || '.' || relname as name, n_tup_ins as ins, n_tup_upd as upd, n_tup_hot_upd as hot, n_tup_del as del, n_dead_tup as dead
       from pg_stat_user_tables`,
  );
  for (const r of t) tables.set(r.name, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del), dead: Number(r.dead) });
  return { statements, lsn: w[0]!.lsn, wal: { records: Number(w[0]!.records), fpi: Number(w[0]!.fpi), bytes: Number(w[0]!.bytes) }, tables };
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/** A statement's text as one short label: whitespace collapsed, cut at 90 characters. */
const label = (query: string) => query.replace(/\s+/g, ' ').trim().slice(0, 90);

/** Rows the retention jobs will delete later (the bench database starts with none): the deferred half of what the window wrote. */
async function retentionBacklog(pool: pg.Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ done: number; events: number; published: number }>(
    `select (select count(*) from push.realtime_outbox where status = 'Done')::int as done,
            (select count(*) from push.realtime_events)::int as events,
            (select count(*) from platform.outbox where published_at is not null)::int as published`,
  );
  return { realtimeOutboxDone: rows[0]!.done, realtimeEvents: rows[0]!.events, kafkaOutboxPublished: rows[0]!.published };
}

/**
 * The window's figures per message (`messages`: the sends accepted): statements by total time (the
 * top `top`, and the rest summed), WAL bytes and records, per table the writes and dead tuples and
 * the indexes an insert or non-HOT update maintains, and the rows retention will delete.
 */
export async function pgWindowReport(pool: pg.Pool, before: PgSnapshot, after: PgSnapshot, messages: number, top = 8) {
  const per = (n: number) => (messages ? n / messages : 0);
  const deltas = [...after.statements].map(([id, s]) => {
    const b = before.statements.get(id);
    return { query: s.query, calls: s.calls - (b?.calls ?? 0), ms: s.ms - (b?.ms ?? 0), rows: s.rows - (b?.rows ?? 0), walBytes: s.walBytes - (b?.walBytes ?? 0) };
  }).filter((d) => d.calls > 0);
  deltas.sort((a, b) => b.ms - a.ms);
  const total = deltas.reduce((a, d) => ({ calls: a.calls + d.calls, ms: a.ms + d.ms }), { calls: 0, ms: 0 });
  const { rows: lsn } = await pool.query<{ bytes: string }>(`select pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text as bytes`, [after.lsn, before.lsn]);
  const { rows: idx } = await pool.query<{ name: string; n: number }>(
    `select schemaname || '.' || relname as name, count(*)::int as n from pg_stat_user_indexes group by 1`,
  );
  const indexes = new Map(idx.map((r) => [r.name, r.n]));
  const tables: Record<string, Record<string, number>> = {};
  for (const [name, t] of after.tables) {
    const b = before.tables.get(name) ?? { ins: 0, upd: 0, hot: 0, del: 0, dead: 0 };
    const d = { ins: t.ins - b.ins, upd: t.upd - b.upd, hot: t.hot - b.hot, del: t.del - b.del, dead: t.dead - b.dead };
    if (!d.ins && !d.upd && !d.del) continue;
    const n = indexes.get(name) ?? 0;
    tables[name] = {
      indexes: n,
      insertsPerMessage: round(per(d.ins)),
      updatesPerMessage: round(per(d.upd)),
      hotUpdatesPerMessage: round(per(d.hot)),
      deletesPerMessage: round(per(d.del)),
      // Every insert and every non-HOT update writes one entry in each index (a partial one only for the rows it covers: hence at most).
      indexEntriesPerMessageAtMost: round(per((d.ins + d.upd - d.hot) * n)),
      deadTuplesLeftPerMessage: round(per(d.dead)),
    };
  }
  return {
    statementsPerMessage: round(per(total.calls)),
    statementMsPerMessage: round(per(total.ms), 3),
    statements: [
      ...deltas.slice(0, top).map((d) => ({
        query: label(d.query),
        perMessage: round(per(d.calls), 3),
        msPerCall: round(d.ms / d.calls, 3),
        usPerMessage: round(per(d.ms * 1000), 1),
        rowsPerCall: round(d.rows / d.calls, 1),
        walBytesPerMessage: Math.round(per(d.walBytes)),
      })),
      ...(deltas.length > top
        ? [{ query: `(${deltas.length - top} others)`, perMessage: round(per(deltas.slice(top).reduce((a, d) => a + d.calls, 0)), 3), usPerMessage: round(per(deltas.slice(top).reduce((a, d) => a + d.ms, 0) * 1000), 1) }]
        : []),
    ],
    wal: {
      bytesPerMessage: Math.round(per(Number(lsn[0]!.bytes))),
      recordsPerMessage: round(per(after.wal.records - before.wal.records), 1),
      fullPageImagesPerMessage: round(per(after.wal.fpi - before.wal.fpi), 2),
    },
    tables,
    retentionBacklogPerMessage: Object.fromEntries(Object.entries(await retentionBacklog(pool)).map(([k, n]) => [k, round(per(n))])),
  };
}
