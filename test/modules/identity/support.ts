import type pg from 'pg';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { createDb } from '../../../src/platform/db/index.ts';
import { newId, type Clock } from '../../../src/platform/time.ts';
import { identitySettingsFrom, type IdentityContext, type IdentitySettings } from '../../../src/modules/identity/context.ts';
import { loadConfig } from '../../../src/config.ts';
import { createIdentityMetrics } from '../../../src/modules/identity/metrics.ts';

/** Identity test helpers: an operation context on a test pool, SQL seeding, outbox reads. */

/**
 * The service's own identity settings (the settings schema's defaults, mapped as the module maps
 * them; test/seed-defaults.test.ts holds them to seed 003), with the fan-out knobs a test shrinks.
 */
export const defaultSettings = (over: Partial<IdentitySettings['fanOut']> & { inlineFanOutThreshold?: number } = {}): IdentitySettings => {
  const { inlineFanOutThreshold, ...fanOut } = over;
  const service = identitySettingsFrom(loadConfig({}));
  return { ...service, inlineFanOutThreshold: inlineFanOutThreshold ?? service.inlineFanOutThreshold, fanOut: { ...service.fanOut, ...fanOut } };
};

export function identityContext(pool: pg.Pool, clock: Clock, settings: IdentitySettings = defaultSettings()): IdentityContext & { registry: Registry } {
  const db = createDb(pool);
  const registry = new Registry();
  return { db, clock, log: createLogger('silent'), metrics: createIdentityMetrics(registry, db, clock), settings, registry };
}

let phoneSeq = 0;
/** A valid, unique Russian mobile number in E.164. */
export const uniquePhone = () => `+7999${String(process.pid % 1000).padStart(3, '0')}${String(++phoneSeq).padStart(4, '0')}`;

/** Inserts `count` users straight into the table (worker tests need volume, not the REST path). */
export async function seedUsers(pool: pg.Pool, count: number, opts: { companyId?: string | null; at?: Date } = {}): Promise<string[]> {
  const ids = Array.from({ length: count }, () => newId());
  await pool.query(`create sequence if not exists public.identity_test_phone`);
  await pool.query(
    `insert into identity.users (id, first_name, last_name, phone_number, status, type, company_id, version, created_at, updated_at)
     select id, 'Test', 'User', '+7998' || lpad(nextval('public.identity_test_phone')::text, 7, '0'), 'Active', 'Investor', $2, 1, $3, $3
       from unnest($1::uuid[]) as id`,
    [ids, opts.companyId ?? null, opts.at ?? new Date('2026-01-01T00:00:00Z')],
  );
  return ids.sort();
}

export async function seedRole(pool: pg.Pool, opts: { code?: string; companyId?: string | null; version?: number } = {}): Promise<string> {
  const id = newId();
  await pool.query(
    `insert into identity.role_definitions (id, code, name, company_id, status, version, created_at, updated_at)
     values ($1, $2, 'Seeded role', $3, 'Active', $4, now(), now())`,
    [id, opts.code ?? `role-${id.slice(-12)}`, opts.companyId ?? null, opts.version ?? 1],
  );
  return id;
}

/** Grants the role to every user (Platform scope unless told), as plain rows. */
export async function seedAssignments(
  pool: pg.Pool,
  roleId: string,
  userIds: readonly string[],
  opts: { scopeType?: 'Platform' | 'Organization'; scopeOrganizationId?: string; expiresAt?: Date | null; status?: string } = {},
): Promise<void> {
  await pool.query(
    `insert into identity.role_assignments (id, role_id, user_id, scope_type, scope_organization_id, status, expires_at, version, granted_at, updated_at)
     select gen_random_uuid(), $1, u, $3, $4, $5, $6, 1, now(), now() from unnest($2::uuid[]) as u`,
    [roleId, userIds, opts.scopeType ?? 'Platform', opts.scopeOrganizationId ?? null, opts.status ?? 'Active', opts.expiresAt ?? null],
  );
}

export interface OutboxEvent<P = Record<string, unknown>> {
  id: string;
  topic: string;
  key: string;
  eventType: string;
  aggregateType: string;
  aggregateId: string;
  correlationId: string | null;
  payload: P;
}

export async function outboxEvents<P = Record<string, unknown>>(pool: pg.Pool, topic: string, eventType?: string): Promise<OutboxEvent<P>[]> {
  const { rows } = await pool.query(
    `select id, topic, key, event_type as "eventType", aggregate_type as "aggregateType", aggregate_id as "aggregateId",
            correlation_id as "correlationId", payload
       from platform.outbox where topic = $1 and ($2::text is null or event_type = $2) order by id`,
    [topic, eventType ?? null],
  );
  return rows;
}

export const ACCESS_TOPIC = 'pin.identity.access.v1';
export const USERS_TOPIC = 'pin.identity.users.v1';

