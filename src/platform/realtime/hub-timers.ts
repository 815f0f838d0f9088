import type { Logger } from '../observability/logger.ts';
import { startAccessRecheck, type HubAccess } from './access.ts';
import { monotonicMs, type HubConnection } from './connection.ts';
import type { HubPresence } from './hub-presence.ts';

/**
 * The hub's timers, all unref'd (they never keep the process up) and stopped by Hub.close():
 * - the liveness tick, a quarter of the shorter of the ping interval and the client timeout: pings
 *   a socket the server has not written to lately, closes a silent one and one whose access token
 *   expired, and forgets what only open sockets need remembered (membership versions, used
 *   connection tokens);
 * - the access recheck (access.ts), the safety net under the backplane's disconnect messages;
 * - the presence refresh, at the store's interval, so this replica's claims do not expire.
 */
export interface HubTimerOptions {
  pingIntervalMs: number;
  clientTimeoutMs: number;
  /** The open connections (the tick walks a copy: it may close some). */
  connections: ReadonlyMap<string, HubConnection>;
  /** Also on each liveness tick, in this order. */
  pruneGroups(): void;
  forgetExpiredTokens(): void;
  /** The users this replica holds connections for. */
  users(): string[];
  access: { checks: readonly HubAccess[]; intervalMs: number } | undefined;
  /** Closes the user's connections on this replica (the access recheck). */
  disconnectLocal(userId: string, reason: string): void;
  presence: HubPresence;
  /** PresenceStore.refreshIntervalMs: undefined when its entries never expire. */
  presenceRefreshMs: number | undefined;
  log: Logger;
}

/** Starts the timers; the answer stops them all. */
export function startHubTimers(o: HubTimerOptions): { stop(): void } {
  const { pingIntervalMs, clientTimeoutMs } = o;
  const tickMs = Math.max(25, Math.floor(Math.min(pingIntervalMs, clientTimeoutMs) / 4));
  const liveness = setInterval(() => {
    const now = monotonicMs();
    const wallNow = Date.now(); // token expiry is wall-clock time, as the token verifier judges it
    for (const conn of [...o.connections.values()]) {
      conn.closeIfTokenExpired(wallNow);
      conn.checkLiveness(now, pingIntervalMs, clientTimeoutMs);
    }
    o.pruneGroups();
    o.forgetExpiredTokens();
  }, tickMs);
  liveness.unref();

  // The safety net under the backplane's disconnect messages: a lost one is caught here.
  const recheck = o.access && startAccessRecheck(o.access, o.users, o.disconnectLocal, o.log);

  const refresh =
    o.presenceRefreshMs === undefined
      ? undefined
      : setInterval(() => {
          const users = o.users();
          if (users.length > 0) o.presence.refresh(users);
        }, o.presenceRefreshMs);
  refresh?.unref();

  return {
    stop() {
      clearInterval(liveness);
      if (refresh) clearInterval(refresh);
      if (recheck) clearInterval(recheck);
    },
  };
}
