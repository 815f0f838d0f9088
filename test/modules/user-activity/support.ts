import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { createLogger, type Logger } from '../../../src/platform/observability/logger.ts';
import type { Registry } from '../../../src/platform/observability/metrics.ts';
import { newId, type Clock } from '../../../src/platform/time.ts';
import type { BatchRunContext } from '../../../src/platform/jobs/index.ts';
import { hashDeviceSecret } from '../../../src/modules/user-activity/sessions/device-secret.ts';

export const MIN = 60_000;
export const T0 = new Date('2026-03-01T12:00:00.000Z');
export const minutesBefore = (m: number, from = T0) => new Date(from.getTime() - m * MIN);

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A debug logger capturing JSON lines; `onLine` hooks run synchronously as each line is written. */
export function captureLog() {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const hooks: ((line: LogLine) => void)[] = [];
  const log: Logger = createLogger('debug', {
    write: (text: string) => {
      raw.push(text);
      const line = JSON.parse(text) as LogLine;
      lines.push(line);
      for (const h of hooks) h(line);
      if (process.env.TEST_LOG_LEVEL === 'debug') process.stderr.write(text);
    },
  });
  return { log, lines, raw, onLine: (h: (line: LogLine) => void) => hooks.push(h) };
}

/** A run on the test's clock: its wall-clock rules and the kernel's MaxRunDuration both read it, so advancing it moves both. */
export function closerContext(clock: Clock, log: Logger, signal = new AbortController().signal): BatchRunContext {
  return { jobRunId: newId(), signal, log, now: () => clock.now(), monotonicMs: () => clock.now().getTime() };
}

export interface SeedSession {
  id?: string;
  anonymousId?: string;
  userId?: string | null;
  ipAddress?: string | null;
  userAgent?: string | null;
  /** The device secret whose digest is stored; default SEED_DEVICE_SECRET. */
  deviceSecret?: string;
  createdAt: Date;
  lastActivityAt: Date;
}

/** The device secret of every seeded session unless one is given: send it as X-Device-Secret. */
export const SEED_DEVICE_SECRET = 'seeded-device-secret-0123456789abcdefghijklm';

export async function seedSession(pool: pg.Pool, s: SeedSession): Promise<string> {
  const id = s.id ?? newId();
  await pool.query(
    `insert into user_activity.sessions
       (id, anonymous_id, user_id, device_user_agent, device_ip_address, device_secret_hash, status, created_at, last_activity_at)
     values ($1, $2, $3, $4, $5, $6, 'Active', $7, $8)`,
    [
      id,
      s.anonymousId ?? `anon-${id}`,
      s.userId ?? null,
      s.userAgent ?? 'Mozilla/5.0 test',
      s.ipAddress ?? '203.0.113.7',
      hashDeviceSecret(s.deviceSecret ?? SEED_DEVICE_SECRET),
      s.createdAt,
      s.lastActivityAt,
    ],
  );
  return id;
}

export interface SeedView {
  id?: string;
  sessionId: string;
  propertyObjectId?: string;
  viewSource?: string;
  filterSnapshot?: unknown;
  createdAt: Date;
  lastActivityAt: Date;
}

export async function seedView(pool: pg.Pool, v: SeedView): Promise<string> {
  const id = v.id ?? newId();
  await pool.query(
    `insert into user_activity.property_object_views
       (id, session_id, property_object_id, view_source, filter_snapshot, status, created_at, last_activity_at)
     values ($1, $2, $3, $4, $5, 'Active', $6, $7)`,
    [id, v.sessionId, v.propertyObjectId ?? newId(), v.viewSource ?? 'Catalog', v.filterSnapshot === undefined ? null : JSON.stringify(v.filterSnapshot), v.createdAt, v.lastActivityAt],
  );
  return id;
}

/** `sessions` Active sessions idle since `lastActivityAt`, each with `viewsPer` open views, in two statements. */
export async function seedStaleSessions(pool: pg.Pool, sessions: number, viewsPer: number, lastActivityAt: Date): Promise<void> {
  const createdAt = new Date(lastActivityAt.getTime() - 10 * MIN);
  await pool.query(
    `insert into user_activity.sessions (id, anonymous_id, device_user_agent, device_ip_address, status, created_at, last_activity_at)
     select gen_random_uuid(), 'bulk-' || g, 'Mozilla/5.0 bulk', '198.51.100.1', 'Active', $2::timestamptz, $3::timestamptz - (g || ' ms')::interval
       from generate_series(1, $1) g`,
    [sessions, createdAt, lastActivityAt],
  );
  await pool.query(
    `insert into user_activity.property_object_views (id, session_id, property_object_id, view_source, status, created_at, last_activity_at)
     select gen_random_uuid(), s.id, gen_random_uuid(), 'Catalog', 'Active', s.created_at, s.last_activity_at
       from user_activity.sessions s cross join generate_series(1, $1) g
      where s.anonymous_id like 'bulk-%' and s.status = 'Active'`,
    [viewsPer],
  );
}

export async function clearActivity(pool: pg.Pool): Promise<void> {
  await pool.query(`truncate user_activity.property_object_views, user_activity.sessions, user_activity.property_object_view_stats,
    user_activity.counted_property_object_views, platform.outbox`);
}

export interface Row {
  id: string;
  status: string;
  ended_at: Date | null;
  duration_seconds: number | null;
  end_reason?: string | null;
  last_activity_at: Date;
}

export async function sessionRow(pool: pg.Pool, id: string): Promise<Row> {
  const { rows } = await pool.query<Row>(`select * from user_activity.sessions where id = $1`, [id]);
  return rows[0]!;
}

export async function viewRow(pool: pg.Pool, id: string): Promise<Row> {
  const { rows } = await pool.query<Row>(`select * from user_activity.property_object_views where id = $1`, [id]);
  return rows[0]!;
}

export interface OutboxRow {
  topic: string;
  key: string;
  event_type: string;
  contract_version: number;
  aggregate_type: string;
  aggregate_id: string;
  occurred_at: Date;
  correlation_id: string | null;
  payload: Record<string, unknown>;
}

export async function outboxEvents(pool: pg.Pool, eventType?: string): Promise<OutboxRow[]> {
  const { rows } = await pool.query<OutboxRow>(
    `select topic, key, event_type, contract_version, aggregate_type, aggregate_id, occurred_at, correlation_id, payload
       from platform.outbox where $1::text is null or event_type = $1 order by id`,
    [eventType ?? null],
  );
  return rows;
}

export async function countWhere(pool: pg.Pool, sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(sql, params);
  return Number(rows[0]!.n);
}

/** Backends of this database waiting on a row lock: proof that a racer is parked behind another. */
export async function waitForLockWaiters(pool: pg.Pool, count: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = await countWhere(
      pool,
      `select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    );
    if (n >= count) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} lock waiters (have ${n})`);
    await sleep(10);
  }
}

/** Holds FOR UPDATE locks on the given views in an open transaction until `release()` (rolls back). */
export async function holdViewLocks(pool: pg.Pool, viewIds: string[]): Promise<{ release(): Promise<void> }> {
  const client = await pool.connect();
  await client.query('begin');
  await client.query(`select id from user_activity.property_object_views where id = any($1::uuid[]) for update`, [viewIds]);
  return {
    async release() {
      await client.query('rollback');
      client.release();
    },
  };
}

/**
 * Fault injection in the real database: any update closing a row whose id is in
 * public.ua_fail_ids raises, as a failed commit on that one row would.
 */
export async function installCloseFailures(pool: pg.Pool): Promise<{ failOn(...ids: string[]): Promise<void>; clear(): Promise<void> }> {
  await pool.query(`
    create table if not exists public.ua_fail_ids (id uuid primary key);
    create or replace function public.ua_fail_close() returns trigger language plpgsql as $$
    begin
      if new.status = 'Inactive' and exists (select 1 from public.ua_fail_ids where id = new.id) then
        raise exception 'injected close failure';
      end if;
      return new;
    end $$;
    drop trigger if exists ua_fail_close on user_activity.sessions;
    create trigger ua_fail_close before update on user_activity.sessions for each row execute function public.ua_fail_close();
    drop trigger if exists ua_fail_close on user_activity.property_object_views;
    create trigger ua_fail_close before update on user_activity.property_object_views for each row execute function public.ua_fail_close();`);
  return {
    failOn: async (...ids) => {
      await pool.query(`insert into public.ua_fail_ids select unnest($1::uuid[]) on conflict do nothing`, [ids]);
    },
    clear: async () => {
      await pool.query('delete from public.ua_fail_ids');
    },
  };
}

export type { Registry };
