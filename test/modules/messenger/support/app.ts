import type pg from 'pg';
import type { InjectOptions } from 'fastify';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { messengerModule } from '../../../../src/modules/messenger/index.ts';
import type { MessengerTuning } from '../../../../src/modules/messenger/defaults.ts';
import type { AppTuning } from '../../../../src/app.ts';
import type { ModuleFactory } from '../../../../src/platform/module.ts';
import { REALTIME_DISPATCH_JOB } from '../../../../src/platform/push/index.ts';
import { buildTestApp, type TestApp } from '../../../support/app.ts';
import { connectClient, type TestClient } from '../../../support/signalr.ts';
import { T0 } from './dispatch.ts';

/** The messenger on the whole app (in-process bus, jobs run on demand), listening for hub clients. */

let phoneSeq = Math.floor(Math.random() * 1_000_000);
const nextPhone = (): string => `+7926${String(1_000_000 + (phoneSeq++ % 9_000_000)).padStart(7, '0')}`;

/** An active user in the messenger's replica of identity (what seed 002's consumer would have written). */
export async function insertReplicaUser(pool: pg.Pool, opts: { id?: string; phone?: string; active?: boolean } = {}): Promise<{ id: string; phone: string }> {
  const id = opts.id ?? newId();
  const phone = opts.phone ?? nextPhone();
  await pool.query(
    `insert into messenger.users (id, first_name, last_name, phone_number, is_active, identity_user_version, created_at, updated_at)
     values ($1, 'Иван', 'Петров', $2, $3, 1, $4, $4)`,
    [id, phone, opts.active ?? true, T0],
  );
  return { id, phone };
}

/**
 * Makes two users Accepted contacts directly in the table (no frames): what a 1:1 call needs to ring
 * (calls/ring-consent.ts), for tests about something else.
 */
export async function insertContacts(pool: pg.Pool, a: { id: string }, b: { id: string }): Promise<void> {
  await pool.query(
    `insert into messenger.contacts (id, requester_user_id, addressee_user_id, status, created_at, accepted_at, updated_at)
     values ($1, $2, $3, 'Accepted', $4, $4, $4) on conflict do nothing`,
    [newId(), a.id, b.id, T0],
  );
}

export interface MessengerApp extends TestApp {
  clock: ManualClock;
  url: string;
  pool: pg.Pool;
  /** A user in the replica, with a token. */
  user(): Promise<{ id: string; phone: string; token: string }>;
  call<T = unknown>(token: string, method: InjectOptions['method'], url: string, payload?: unknown): Promise<{ status: number; body: T }>;
  /** Accepted contacts without frames (insertContacts): a call between them rings. */
  contacts(a: { id: string }, b: { id: string }): Promise<void>;
  /** The user accepts the chat, a message request to them (docs/security.md, "Consent"); throws unless 200. */
  accept(token: string, chatId: string): Promise<void>;
  /** One RealtimeDispatchJob run, as the timer or a NOTIFY would start it. */
  dispatch(): Promise<Record<string, number>>;
  connect(token: string, events: string[]): Promise<TestClient>;
}

/** `others`: modules beside the messenger (e.g. notifications, for a client test that registers a push token). */
export async function messengerApp(
  env: Record<string, string> = {},
  tuning: Partial<MessengerTuning> = {},
  kernel: Partial<AppTuning> = {},
  others: ModuleFactory[] = [],
): Promise<MessengerApp> {
  const clock = new ManualClock(T0);
  const t = await buildTestApp(env, { modules: [messengerModule(tuning), ...others], clock, tuning: kernel });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = t.app.server.address() as { port: number };
  const pool = t.database.pool;
  return {
    ...t,
    clock,
    pool,
    url: `http://127.0.0.1:${port}/hubs/messenger`,
    async user() {
      const u = await insertReplicaUser(pool);
      return { ...u, token: await t.token({ userId: u.id }) };
    },
    async call(token, method, url, payload) {
      const res = await t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload: payload as object }) });
      return { status: res.statusCode, body: (res.body ? res.json() : undefined) as never };
    },
    contacts: (a, b) => insertContacts(pool, a, b),
    async accept(token, chatId) {
      const res = await t.app.inject({ method: 'POST', url: `/api/messenger/chats/${chatId}/accept`, headers: { authorization: `Bearer ${token}` } });
      if (res.statusCode !== 200) throw new Error(`accept chat ${chatId}: ${res.statusCode} ${res.body}`);
    },
    async dispatch() {
      const result = await t.app.platform.runner.runNow(REALTIME_DISPATCH_JOB);
      if (result.outcome !== 'success') throw new Error(`dispatch run ${result.outcome}: ${result.error ?? result.skipReason}`);
      return result.counts;
    },
    connect: (token, events) => connectClient(`http://127.0.0.1:${port}/hubs/messenger`, token, { events }),
  };
}

export const ALL_EVENTS = [
  'message_received',
  'message_edited',
  'message_deleted',
  'read_receipt_updated',
  'reaction_changed',
  'chat_updated',
  'contact_request_received',
  'contact_request_accepted',
  'contact_removed',
  'blacklist_changed',
  'call_invited',
  'call_answered',
  'call_declined',
  'call_missed',
  'call_cancelled',
  'call_ended',
  'conference_invited',
  'conference_started',
  'conference_ended',
  'conference_participant_joined',
  'conference_participant_left',
  'recording_started',
  'recording_stopped',
  'recording_available',
  'recording_failed',
  'screen_share_started',
  'screen_share_stopped',
];

/** The payloads a test client (test/support hub clients) received of one event, in order. */
export const ofEvent = <P = Record<string, unknown>>(c: { received: { event: string; payload: unknown }[] }, event: string): P[] =>
  c.received.filter((r) => r.event === event).map((r) => r.payload as P);
