import { after } from 'node:test';
import type { AppTuning } from '../../../src/app.ts';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { DestinationStream } from 'pino';
import { loadConfig, type Config } from '../../../src/config.ts';
import { buildApp } from '../../../src/app.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { signToken } from '../../../src/platform/http/auth.ts';
import { ManualClock, newId } from '../../../src/platform/time.ts';
import type { RunResult } from '../../../src/platform/jobs/run-job.ts';
import { notificationsModule } from '../../../src/modules/notifications/index.ts';
import { NOTIFICATIONS_DEFAULTS, type NotificationsTuning } from '../../../src/modules/notifications/defaults.ts';
import messenger from '../../../src/modules/messenger/index.ts';
import { REALTIME_DISPATCH_JOB } from '../../../src/platform/push/index.ts';
import { DISPATCHER_JOB, RETRY_WORKER_JOB, type Channel } from '../../../src/modules/notifications/model.ts';
import { signWebhook } from '../../../src/modules/notifications/webhooks/signature.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { startHttpProvider, startSmtpServer, type FakeHttpProvider, type FakeSmtpServer } from './providers-support.ts';
import { metricValue } from '../../support/metrics.ts';

export const WEBHOOK_SECRET = 'notifications-webhook-secret-0123456789';

export interface NtfApp {
  app: FastifyInstance;
  config: Config;
  /** The notifications module's fixed values this app runs with. */
  tuning: NotificationsTuning;
  clock: ManualClock;
  pool: pg.Pool;
  adminToken: string;
  userToken(userId: string): Promise<string>;
  runRetry(): Promise<RunResult>;
  runDispatch(): Promise<RunResult>;
  /** One run of the messenger's realtime dispatcher, which pushes the stored notification_status_changed frames. */
  runStatusEvents(): Promise<RunResult>;
}

export interface NtfWorld {
  database: TestDatabase;
  /** The settings every app of the world gets (provider URLs, secrets). */
  env: Record<string, string>;
  /** The notifications module's fixed values every app of the world gets unless a replica picks others. */
  tuning: Partial<NotificationsTuning>;
  http: FakeHttpProvider;
  smtp: FakeSmtpServer;
  /** Another app (a replica) on the same database and providers. */
  replica(env?: Record<string, string>, tuning?: Partial<NotificationsTuning>): Promise<NtfApp>;
  main: NtfApp;
}

/**
 * The app with the notifications module (and the messenger's, whose realtime outbox pushes the status frames), on a fresh database, with a real local HTTP provider
 * (SMS gateway + push service) and a real SMTP server; time is a ManualClock starting now. Logs go
 * to `opts.logDestination` when given (e.g. test/support/logs.ts), at LOG_LEVEL (silent by default).
 */
export async function notificationsWorld(env: Record<string, string> = {}, opts: { logDestination?: DestinationStream; tuning?: Partial<AppTuning>; notifications?: Partial<NotificationsTuning> } = {}): Promise<NtfWorld> {
  // File-end hooks run in registration order: the apps (job runner, LISTEN and lock connections)
  // must close before the database is dropped under them.
  const apps: FastifyInstance[] = [];
  after(async () => {
    for (const app of apps.reverse()) await app.close();
  });
  const database = await createTestDatabase();
  const [http, smtp] = await Promise.all([startHttpProvider(), startSmtpServer()]);
  const baseEnv: Record<string, string> = {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    JOBS_ENABLED: 'false',
    PORT: '0',
    NOTIFICATIONS_SMS_HTTP_URL: http.baseUrl,
    NOTIFICATIONS_SMS_HTTP_SECRET: 'sms-api-credential-0123',
    NOTIFICATIONS_PUSH_HTTP_URL: http.baseUrl,
    NOTIFICATIONS_SMTP_HOST: '127.0.0.1',
    NOTIFICATIONS_SMTP_PORT: String(smtp.port),
    // The local SMTP server offers no STARTTLS (test/modules/notifications/delivery/smtp-tls.test.ts covers TLS).
    NOTIFICATIONS_SMTP_TLS: 'none',
    NOTIFICATIONS_EMAIL_HTTP_URL: http.baseUrl,
    NOTIFICATIONS_EMAIL_HTTP_SECRET: 'email-api-credential-0123',
    NOTIFICATIONS_EMAIL_HTTP_WEBHOOK_SECRET: WEBHOOK_SECRET,
    NOTIFICATIONS_SMS_HTTP_WEBHOOK_SECRET: WEBHOOK_SECRET,
    NOTIFICATIONS_PUSH_HTTP_WEBHOOK_SECRET: WEBHOOK_SECRET,
    NOTIFICATIONS_SMTP_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ...env,
  };
  const worldTuning: Partial<NotificationsTuning> = { providerTimeoutMs: 5000, ...opts.notifications };
  const replica = async (more: Record<string, string> = {}, tuning = worldTuning): Promise<NtfApp> => {
    const config = loadConfig({ ...baseEnv, ...more });
    const clock = new ManualClock(new Date());
    const app = await buildApp(config, {
      pool: database.pool,
      databaseUrl: database.url,
      log: createLogger(config.LOG_LEVEL, opts.logDestination),
      // The messenger's realtime outbox carries the status frames (its dispatcher pushes them).
      modules: [notificationsModule(tuning), messenger],
      clock,
      tuning: opts.tuning,
    });
    apps.push(app);
    return {
      app,
      config,
      tuning: { ...NOTIFICATIONS_DEFAULTS, ...tuning },
      clock,
      pool: database.pool,
      adminToken: await signToken({ userId: newId(), admin: true }, config.JWT_SECRET),
      userToken: (userId) => signToken({ userId, admin: false }, config.JWT_SECRET),
      runRetry: () => app.platform.runner.runNow(RETRY_WORKER_JOB),
      runDispatch: () => app.platform.runner.runNow(DISPATCHER_JOB),
      runStatusEvents: () => app.platform.runner.runNow(REALTIME_DISPATCH_JOB),
    };
  };
  return { database, env: baseEnv, tuning: worldTuning, http, smtp, replica, main: await replica() };
}

export interface ChannelSetup {
  isEnabled?: boolean;
  providerKey?: string;
  maxAttempts?: number;
  retryBackoff?: { kind: 'Fixed'; delaySeconds: number } | { kind: 'Exponential'; initialDelaySeconds: number; maxDelaySeconds: number; multiplier?: number };
}

const DEFAULT_PROVIDER: Record<Channel, string> = {
  InApp: 'hub',
  Email: 'smtp',
  Sms: 'http-sms',
  Push: 'http-push',
  Telegram: 'telegram',
  Max: 'max',
  WhatsApp: 'whatsapp',
  Viber: 'viber',
};

/** PUT /api/notifications/channels/{channel} as an admin would. */
export async function setChannel(a: NtfApp, channel: Channel, s: ChannelSetup = {}): Promise<void> {
  const res = await a.app.inject({
    method: 'PUT',
    url: `/api/notifications/channels/${channel}`,
    headers: { authorization: `Bearer ${a.adminToken}` },
    payload: {
      isEnabled: s.isEnabled ?? true,
      providerKey: s.providerKey ?? DEFAULT_PROVIDER[channel],
      maxAttempts: s.maxAttempts ?? 5,
      retryBackoff: s.retryBackoff ?? { kind: 'Exponential', initialDelaySeconds: 60, maxDelaySeconds: 3600, multiplier: 2 },
    },
  });
  if (res.statusCode !== 200) throw new Error(`channel ${channel}: ${res.statusCode} ${res.body}`);
}

export interface CreatedNotification {
  id: string;
  channel: Channel;
  status: string;
  version: number;
}

/** POST /api/notifications (admin); returns the created rows by channel. */
export async function notify(
  a: NtfApp,
  body: { recipientUserId?: string; title?: string; body?: string; channels?: Channel[]; email?: string; phone?: string },
): Promise<{ userId: string; byChannel: Map<Channel, CreatedNotification>; all: CreatedNotification[] }> {
  const userId = body.recipientUserId ?? newId();
  const res = await a.app.inject({
    method: 'POST',
    url: '/api/notifications',
    headers: { authorization: `Bearer ${a.adminToken}` },
    payload: { title: 'Your viewing is confirmed', body: 'Tomorrow at 10:00', ...body, recipientUserId: userId },
  });
  if (res.statusCode !== 201) throw new Error(`notify: ${res.statusCode} ${res.body}`);
  const all = (res.json() as { notifications: CreatedNotification[] }).notifications;
  return { userId, all, byChannel: new Map(all.map((n) => [n.channel, n])) };
}

export interface StoredNotification {
  id: string;
  channel: Channel;
  status: 'Pending' | 'Sent' | 'Failed';
  attempts: number;
  terminal: boolean;
  next_attempt_at: Date | null;
  last_error: string | null;
  provider_message_id: string | null;
  delivery_cycle: number;
  delivered_at: Date | null;
  read_at: Date | null;
  version: number;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  send_intent_cycle: number | null;
  send_intent_at: Date | null;
  send_intent_message_id: string | null;
}

export async function stored(pool: pg.Pool, id: string): Promise<StoredNotification> {
  const { rows } = await pool.query<StoredNotification>('select * from notifications.notifications where id = $1', [id]);
  if (!rows[0]) throw new Error(`no notification ${id}`);
  return rows[0];
}

export interface DispatchedRow {
  key: string;
  event_type: string;
  topic: string;
  payload: { NotificationId: string; Channel: string; Status: 'Sent' | 'Failed'; DeliveryCycle: number; ProviderMessageId?: string; ErrorCode?: string; OccurredAt: string };
}

/** NotificationDispatchedEvent rows written to the outbox for one notification, in order. */
export async function dispatchedEvents(pool: pg.Pool, notificationId: string): Promise<DispatchedRow[]> {
  const { rows } = await pool.query<DispatchedRow>(
    `select key, event_type, topic, payload from platform.outbox where event_type = 'NotificationDispatchedEvent' and key = $1 order by id`,
    [notificationId],
  );
  return rows;
}

/** Seeds a Failed notification due at `dueAt` (the state after a first failed send). */
export async function seedFailed(
  pool: pg.Pool,
  o: { channel: Channel; address: string | null; attempts?: number; dueAt: Date; userId?: string },
): Promise<string> {
  const id = newId();
  await pool.query(
    `insert into notifications.notifications
       (id, recipient_user_id, channel, recipient_address, title, body, status, attempts, next_attempt_at, last_error, created_at, updated_at)
     values ($1, $2, $3, $4, 'Price changed', 'The flat you follow is cheaper now', 'Failed', $5, $6, 'NTF_PROVIDER_TRANSIENT', $6, $6)`,
    [id, o.userId ?? newId(), o.channel, o.address, o.attempts ?? 1, o.dueAt],
  );
  return id;
}

/** A provider's delivery receipt as the provider would send it: the signed request, ready for `inject`. */
export function signedReceipt(
  a: NtfApp,
  providerKey: string,
  body: Record<string, unknown>,
  opts: { secret?: string | null; timestamp?: number; tamper?: (raw: string) => string; raw?: string } = {},
) {
  // `raw`: these exact bytes signed and sent instead of the body's JSON (a body that is not JSON).
  const raw = opts.raw ?? JSON.stringify(body);
  const ts = opts.timestamp ?? Math.floor(a.clock.now().getTime() / 1000);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.secret !== null) {
    headers['x-signature'] = signWebhook(opts.secret ?? WEBHOOK_SECRET, ts, raw);
    headers['x-signature-timestamp'] = String(ts);
  }
  return {
    method: 'POST' as const,
    url: `/api/notifications/providers/${providerKey}/webhook`,
    headers,
    payload: opts.tamper ? opts.tamper(raw) : raw,
  };
}

/** Posts a signed delivery receipt (signed at the app's clock unless `timestamp` is given). */
export async function postReceipt(
  a: NtfApp,
  providerKey: string,
  body: Record<string, unknown>,
  opts: { secret?: string | null; timestamp?: number; tamper?: (raw: string) => string } = {},
) {
  return a.app.inject(signedReceipt(a, providerKey, body, opts));
}

/** A metric of the app, through the one metric reader (it fails on an unknown name, label or series). */
export const metric = (a: NtfApp, name: string, labels: Record<string, string> = {}): Promise<number> => metricValue(a.app.platform.registry, name, labels);

export const MINUTE = 60_000;
