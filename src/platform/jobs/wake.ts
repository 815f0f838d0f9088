import pgListen from 'pg-listen';
import type { Logger } from '../observability/logger.ts';
import { JOBS_DEFAULTS } from './defaults.ts';

// pg-listen is CommonJS whose main export is the factory itself; tsc under nodenext types the
// default import as the module object, so name the factory's type once here.
const createSubscriber = pgListen as unknown as typeof pgListen.default;
type Subscriber = ReturnType<typeof createSubscriber>;

export const WAKE_APPLICATION_NAME = 'pin-jobs-wake';

/**
 * One LISTEN connection per runner for every wake channel. Reconnecting is pg-listen's job; we
 * log its errors, and when it reconnects we call `onReconnected`, because notifications sent
 * while the connection was down are lost and the jobs must catch up with one run each.
 */
export interface WakeListener {
  /** Resolves once LISTEN is in place (or the attempt failed, logged; retried in the background). */
  listen(channel: string): Promise<void>;
  close(): Promise<void>;
}

export function createWakeListener(opts: {
  databaseUrl: string;
  log: Logger;
  /** `payload` as the NOTIFY sent it ('' when it had none). */
  onWake(channel: string, payload: string): void;
  onReconnected(): void;
}): WakeListener {
  const channels = new Set<string>();
  let subscriber: Subscriber | null = null;
  let opening: Promise<void> | null = null;
  let restartTimer: NodeJS.Timeout | undefined;
  let closed = false;

  function open(): Promise<void> {
    const sub = createSubscriber(
      { connectionString: opts.databaseUrl, application_name: WAKE_APPLICATION_NAME, connectionTimeoutMillis: 5000 },
      {
        parse: (payload: string) => payload, // payloads are never read; JSON.parse would reject plain text
        paranoidChecking: 10_000,
        retryInterval: (attempt: number) => Math.min(250 * 2 ** attempt, 5000),
        retryTimeout: 60_000,
      },
    );
    subscriber = sub;
    let connectedBefore = false;
    sub.events.on('notification', (n) => opts.onWake(n.channel, typeof n.payload === 'string' ? n.payload : ''));
    sub.events.on('reconnect', (attempt) => opts.log.warn({ attempt }, 'job wake listener reconnecting'));
    sub.events.on('connected', () => {
      if (connectedBefore) {
        opts.log.info('job wake listener reconnected; waking its jobs to catch up');
        opts.onReconnected();
      }
      connectedBefore = true;
    });
    sub.events.on('error', (err) => {
      // pg-listen emits an error only when re-initialising failed for good.
      if (closed) return;
      opts.log.error({ err }, 'job wake listener failed');
      scheduleRestart(sub);
    });
    return (async () => {
      await sub.connect();
      if (closed) return; // close() ran meanwhile and closed this subscriber
      for (const channel of channels) await sub.listenTo(channel);
    })().catch((err: unknown) => {
      // close() cutting a connection attempt short (a stop during start-up) is not a failure.
      if (closed) return;
      opts.log.error({ err }, 'job wake listener could not connect');
      scheduleRestart(sub);
    });
  }

  function scheduleRestart(sub: Subscriber): void {
    if (closed || subscriber !== sub || restartTimer) return;
    subscriber = null;
    sub.close().catch(() => undefined);
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (closed) return;
      opening = open().then(() => {
        if (subscriber) opts.onReconnected();
      });
    }, JOBS_DEFAULTS.wakeRestartDelayMs);
    restartTimer.unref();
  }

  return {
    async listen(channel) {
      if (closed || channels.has(channel)) return;
      channels.add(channel);
      if (!subscriber && !restartTimer) {
        opening = open(); // subscribes to every channel known by then, this one included
        return opening;
      }
      await opening;
      await subscriber?.listenTo(channel)?.catch((err: unknown) => {
        opts.log.error({ err, channel }, 'job wake listener could not LISTEN');
      });
    },
    async close() {
      closed = true;
      clearTimeout(restartTimer);
      const sub = subscriber;
      subscriber = null;
      await sub?.close().catch(() => undefined);
    },
  };
}
