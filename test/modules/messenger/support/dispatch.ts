import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Db } from '../../../../src/platform/db/index.ts';
import type { BatchRunContext } from '../../../../src/platform/jobs/index.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import type { Hub } from '../../../../src/platform/realtime/index.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import { createMediaJoinMinter } from '../../../../src/modules/messenger/calls/media-join.ts';
import { activeChatIdsOf, chatMembership } from '../../../../src/modules/messenger/chats/chat-sql.ts';
import { chatGroup, chatIdOfGroup } from '../../../../src/modules/messenger/model/chat-kinds.ts';
import type { MessengerPushKind } from '../../../../src/modules/messenger/model/push-kinds.ts';
import type { MediaJoinMinter } from '../../../../src/modules/messenger/calls/media-join.ts';
import { createPush, dispatchSettingsOf, PUSH_DEFAULTS, pushDispatchJob, type DispatchSettings, type PushDispatchDeps } from '../../../../src/platform/push/index.ts';
import { loadConfig } from '../../../../src/config.ts';
import type { BatchWorker } from '../../../../src/platform/jobs/index.ts';
import { createRealtimeMetrics } from '../../../../src/platform/push/metrics.ts';
import { createTestDatabase, type TestDatabase } from '../../../support/db.ts';
import { startHubApp, type HubApp } from '../../../support/signalr.ts';
import { logCapture } from '../../../support/logs.ts';
import { messengerPush } from './push.ts';

/** Helpers of the realtime dispatch tests: a real hub, a cloned database, rows and entities written by SQL. */

export const T0 = new Date('2026-03-01T10:00:00Z');

/** The push part's dispatcher over the messenger's kinds alone: one built on its own, as a second runner's is. */
export function messengerDispatchJob(deps: Omit<PushDispatchDeps, 'kinds'> & { mintJoin: MediaJoinMinter }): BatchWorker {
  const { mintJoin, ...rest } = deps;
  return pushDispatchJob({ ...rest, kinds: messengerPush(mintJoin).kinds });
}
export const MEDIA_SECRET = 'test-media-secret-0123456789-0123456789';
export const TURN_SECRET = 'test-turn-secret-0123456789';

/**
 * The service's own dispatch settings (the settings schema's defaults, mapped as the app maps them;
 * test/seed-defaults.test.ts holds them to seed 000), without jitter so tests can name exact retry
 * times (jitter has its own tests).
 */
export const seedSettings = (over: Partial<DispatchSettings> = {}): DispatchSettings => {
  const service = dispatchSettingsOf(loadConfig({}), PUSH_DEFAULTS);
  return { ...service, backoff: { ...service.backoff, jitter: 0 }, ...over };
};

export interface DispatchEnv {
  database: TestDatabase;
  pool: pg.Pool;
  db: Db;
  hubApp: HubApp;
  clock: ManualClock;
  registry: Registry;
  logs: ReturnType<typeof logCapture>;
  quarantined: unknown[];
  /** The hub the dispatcher pushes through; tests swap it to simulate an outage. */
  hubRef: { current: Pick<Hub, 'send' | 'addUserToGroup' | 'removeUserFromGroup' | 'disconnectUser' | 'health'> };
  sends: { group: string; event: string; payload: Record<string, unknown> }[];
  dispatcher: ReturnType<typeof messengerDispatchJob>;
  /** Another dispatcher over the same database and hub (a second runner). */
  newDispatcher(settings?: Partial<DispatchSettings>): ReturnType<typeof messengerDispatchJob>;
  /** A run's context on the env's clock and log capture. */
  ctx(over?: Partial<BatchRunContext>): BatchRunContext;
  run(signal?: AbortSignal): ReturnType<ReturnType<typeof messengerDispatchJob>['runOnce']>;
}

/** A real hub app (joins chat groups from messenger.chat_participants) and a dispatcher over a fresh database. */
export async function dispatchEnv(opts: { settings?: Partial<DispatchSettings>; hubOptions?: Parameters<typeof startHubApp>[0] } = {}): Promise<DispatchEnv> {
  const database = await createTestDatabase();
  const { pool, db } = database;
  const hubApp = await startHubApp({
    resolveGroups: async (p) => (await activeChatIdsOf(db, p.userId)).map(chatGroup),
    // As the messenger module wires it: chat sends carry a membership version checked against these.
    resolveGroupMembers: async (group) => {
      const chatId = chatIdOfGroup(group);
      return chatId === undefined ? undefined : chatMembership(db, chatId);
    },
    ...opts.hubOptions,
  });
  const clock = new ManualClock(T0);
  const registry = new Registry();
  const logs = logCapture();
  const quarantined: unknown[] = [];
  const sends: DispatchEnv['sends'] = [];
  const hubRef: DispatchEnv['hubRef'] = { current: hubApp.hub };
  const hub: PushDispatchDeps['hub'] = {
    send: async (group, event, payload, sendOpts) => {
      await hubRef.current.send(group, event, payload, sendOpts);
      sends.push({ group, event, payload: payload as Record<string, unknown> });
    },
    addUserToGroup: (u, g) => hubRef.current.addUserToGroup(u, g),
    removeUserFromGroup: (u, g) => hubRef.current.removeUserFromGroup(u, g),
    disconnectUser: (u, reason) => hubRef.current.disconnectUser(u, reason),
    health: () => hubRef.current.health(),
  };
  const metrics = createRealtimeMetrics(registry, db);
  const mintJoin = createMediaJoinMinter(
    { tokenSecret: MEDIA_SECRET, tokenTtlSeconds: 300, turnUrls: ['turn:127.0.0.1:3478'], turnSecret: TURN_SECRET, turnTtlSeconds: 3600 },
    clock,
  );
  const newDispatcher = (settings: Partial<DispatchSettings> = {}) =>
    messengerDispatchJob({
      db,
      hub,
      metrics,
      mintJoin,
      settings: seedSettings({ ...opts.settings, ...settings }),
      onQuarantined: (e) => quarantined.push(e),
    });
  const dispatcher = newDispatcher();
  const ctx = (over: Partial<BatchRunContext> = {}): BatchRunContext => ({
    jobRunId: newId(),
    signal: new AbortController().signal,
    log: logs.log,
    now: () => clock.now(),
    ...over,
  });
  return {
    database,
    pool,
    db,
    hubApp,
    clock,
    registry,
    logs,
    quarantined,
    hubRef,
    sends,
    dispatcher,
    newDispatcher,
    ctx,
    run: (signal = new AbortController().signal) => dispatcher.runOnce(ctx({ signal })),
  };
}

export const uid = (): string => randomUUID();

/** A group chat with its Active participants and LastSeq, written straight to the tables. */
export async function insertChat(pool: pg.Pool, members: string[], opts: { kind?: 'Direct' | 'Group'; lastSeq?: number } = {}): Promise<string> {
  const chatId = newId();
  const kind = opts.kind ?? 'Group';
  const directKey = kind === 'Direct' ? [...members].sort().join(':') : null;
  await pool.query(
    `insert into messenger.chats (id, kind, title, direct_key, created_by_user_id, last_seq, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $7)`,
    [chatId, kind, kind === 'Group' ? 'Deal 42' : null, directKey, members[0], opts.lastSeq ?? 0, T0],
  );
  for (const [i, userId] of members.entries()) {
    await pool.query(
      `insert into messenger.chat_participants (id, chat_id, user_id, role, status, joined_at, updated_at)
       values ($1, $2, $3, $4, 'Active', $5, $5)`,
      [newId(), chatId, userId, i === 0 ? 'Owner' : 'Member', T0],
    );
  }
  return chatId;
}

export async function insertMessage(pool: pg.Pool, chatId: string, seq: number, sender: string, body = `hello ${seq}`): Promise<string> {
  const id = newId();
  await pool.query(
    `insert into messenger.messages (id, chat_id, seq, sender_user_id, kind, body, sent_at) values ($1, $2, $3, $4, 'Text', $5, $6)`,
    [id, chatId, seq, sender, body, T0],
  );
  return id;
}

export interface OutboxInsert {
  kind: MessengerPushKind | 'NotificationStatusChanged';
  targetKind?: 'ChatGroup' | 'User';
  chatId?: string | null;
  targetUserId?: string | null;
  messageId?: string | null;
  refId?: string | null;
  sessionKind?: 'Direct' | 'Conference' | null;
  seq?: number | null;
  attempts?: number;
  status?: string;
  nextAttemptAt?: Date;
  createdAt?: Date;
}

export async function insertOutbox(pool: pg.Pool, r: OutboxInsert): Promise<string> {
  const id = newId();
  const createdAt = r.createdAt ?? T0;
  await pool.query(
    `insert into push.realtime_outbox
       (id, kind, target_kind, chat_id, target_user_id, message_id, ref_id, session_kind, seq, status, attempts, next_attempt_at, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)`,
    [
      id,
      r.kind,
      r.targetKind ?? 'ChatGroup',
      r.chatId ?? null,
      r.targetUserId ?? null,
      r.messageId ?? null,
      r.refId ?? null,
      r.sessionKind ?? null,
      r.seq ?? null,
      r.status ?? 'Pending',
      r.attempts ?? 0,
      r.nextAttemptAt ?? createdAt,
      createdAt,
    ],
  );
  return id;
}

export interface OutboxState {
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
  row_version: number;
}

export async function outboxRow(pool: pg.Pool, id: string): Promise<OutboxState> {
  const { rows } = await pool.query<OutboxState>(
    `select status, attempts, next_attempt_at, last_error, row_version from push.realtime_outbox where id = $1`,
    [id],
  );
  if (!rows[0]) throw new Error(`no outbox row ${id}`);
  return rows[0];
}

/** A pending promise the test resolves by hand. */
export function gate(): { wait: Promise<void>; open(): void } {
  let open: () => void = () => {};
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}
