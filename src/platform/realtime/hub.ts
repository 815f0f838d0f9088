import type { WebSocket } from 'ws';
import type { Logger } from '../observability/logger.ts';
import type { Registry } from '../observability/metrics.ts';
import { AuthError, type AuthCode, type Principal } from '../http/auth.ts';
import { createTokenVerifier, type TokenVerifier } from '../http/token-verifier.ts';
import { newId, systemClock, type Clock } from '../time.ts';
import { createInProcessBackplane, type Backplane, type BackplaneMessage, type BackplaneStatus } from './backplane.ts';
import { CloseErrors, FrameTally, HubConnection, monotonicMs, type ConnectionLimits } from './connection.ts';
import { signConnectionToken, verifyConnectionToken } from './connection-token.ts';
import { GroupIndex, userGroup } from './groups.ts';
import { createHubMetrics } from './metrics.ts';
import { createInProcessPresence, type PresenceStore } from './presence.ts';
import { encodeInvocation, negotiateReply, type NegotiateReply } from './protocol.ts';

export interface HubOptions {
  /** JWT secret (same as REST); keys the negotiate connection tokens (and verifies bearer tokens when no `tokens` is given). */
  secret: string;
  /** The bearer token verifier REST uses (AUTH_JWKS_URL, issuer, audience, lifetime); default: HS256 with `secret`. */
  tokens?: TokenVerifier;
  registry: Registry;
  logger: Logger;
  /** Groups a new connection joins besides `user:{UserId}` (the messenger lists `chat:{ChatId}`). */
  resolveGroups?: (principal: Principal) => Promise<Iterable<string>>;
  /** HUB_PING_INTERVAL_MS: a ping (type 6) goes to a socket the server has not written to for this long. */
  pingIntervalMs?: number;
  /** HUB_CLIENT_TIMEOUT_MS: a socket that sent nothing (not even a ping) for this long is closed. */
  clientTimeoutMs?: number;
  /** HUB_MAX_BUFFERED_BYTES: per-socket send buffer cap; past it the socket is closed as a slow consumer. */
  maxBufferedBytes?: number;
  backplane?: Backplane;
  presence?: PresenceStore;
  replicaId?: string;
  /** Business clock for connection-token expiry (socket liveness runs on a monotonic clock). */
  clock?: Clock;
  /** How long a negotiate's connection token opens a WebSocket. Default 5 min. */
  connectionTokenTtlMs?: number;
  /** How long close() waits for sockets to finish their close handshake before dropping them. Default 2 s. */
  closeGraceMs?: number;
}

export type AuthResult =
  | { ok: true; principal: Principal }
  | { ok: false; code: 'AUTH_REQUIRED' | AuthCode; message: string; statusCode: 401 | 503 };

export interface Hub {
  readonly replicaId: string;
  /** Pushes `{type:1,target:eventName,arguments:[payload]}` to every socket of the group, on every replica. */
  send(group: string, eventName: string, payload: unknown): Promise<void>;
  /** Applies to the user's open connections at once, on every replica. */
  addUserToGroup(userId: string, group: string): Promise<void>;
  removeUserFromGroup(userId: string, group: string): Promise<void>;
  isOnline(userId: string): Promise<boolean>;
  /** Backplane state for /health/ready: 'disabled' for the in-process backplane. */
  health(): Promise<BackplaneStatus>;
  /** Open connections on this replica. */
  connectionCount(): number;
  /** Sends a close message to every socket, closes them, then the backplane and presence store. */
  close(): Promise<void>;

  // ---- used by the transport (plugin.ts) ----
  readonly closing: boolean;
  authenticate(token: string | undefined): Promise<AuthResult>;
  negotiate(principal: Principal, requestedVersion: number): NegotiateReply;
  /** The connection id for a WebSocket: from a negotiate token (`?id=`), or fresh when negotiation was skipped. */
  connectionIdFor(principal: Principal, connectionToken: string | undefined): string | undefined;
  attach(socket: WebSocket, principal: Principal, connectionId: string): void;
}

/** Longest unterminated record kept between WebSocket messages: clients only send handshakes and pings. */
const MAX_PENDING_CHARS = 64 * 1024;

export function createHub(opts: HubOptions): Hub {
  const log = opts.logger.child({ component: 'hub' });
  const metrics = createHubMetrics(opts.registry);
  const backplane = opts.backplane ?? createInProcessBackplane();
  const presence = opts.presence ?? createInProcessPresence();
  const replicaId = opts.replicaId ?? newId();
  const clock = opts.clock ?? systemClock;
  const pingIntervalMs = opts.pingIntervalMs ?? 15_000;
  const clientTimeoutMs = opts.clientTimeoutMs ?? 30_000;
  const tokenTtlMs = opts.connectionTokenTtlMs ?? 5 * 60_000;
  const tokens = opts.tokens ?? createTokenVerifier({ secret: opts.secret });
  const limits: ConnectionLimits = { maxBufferedBytes: opts.maxBufferedBytes ?? 1_048_576, maxPendingChars: MAX_PENDING_CHARS };

  const index = new GroupIndex<HubConnection>();
  const byId = new Map<string, HubConnection>();
  /** Groups removed while a connection's resolveGroups was in flight: its (older) answer must not re-add them. */
  const joining = new Map<HubConnection, Set<string>>();
  /** Resolves when the connection's groups are joined; false if resolveGroups failed. */
  const ready = new WeakMap<HubConnection, Promise<boolean>>();
  const presenceWrites = new Set<Promise<void>>();
  const allClosed = new Set<() => void>();
  let closing = false;

  const trackPresence = (what: string, write: Promise<void>) => {
    const p = write.catch((err: Error) => log.warn({ err: { message: err.message } }, `hub presence ${what} failed`));
    presenceWrites.add(p);
    void p.finally(() => presenceWrites.delete(p));
    return p;
  };

  const deliverLocal = (group: string, event: string, payload: unknown) => {
    const members = index.inGroup(group);
    if (!members) return;
    const frame = Buffer.from(encodeInvocation(event, payload));
    // A send may close a slow consumer; deleting from a Set while iterating it is safe.
    for (const conn of members) conn.send(frame, 'invocation');
  };

  const joinLocal = (userId: string, group: string) => {
    for (const conn of index.ofUser(userId) ?? []) {
      index.join(conn, group);
      joining.get(conn)?.delete(group);
    }
  };

  const leaveLocal = (userId: string, group: string) => {
    for (const conn of index.ofUser(userId) ?? []) {
      index.leave(conn, group);
      joining.get(conn)?.add(group);
    }
  };

  backplane.onMessage((message: BackplaneMessage) => {
    if (message.origin === replicaId) return; // already applied when it was published
    if (message.kind === 'send') deliverLocal(message.group, message.event, message.payload);
    else if (message.kind === 'join') joinLocal(message.userId, message.group);
    else leaveLocal(message.userId, message.group);
  });

  async function joinGroups(conn: HubConnection, firstOfUser: Promise<void> | undefined): Promise<boolean> {
    const removedMeanwhile = new Set<string>();
    joining.set(conn, removedMeanwhile);
    try {
      const groups = opts.resolveGroups ? await opts.resolveGroups(conn.principal) : [];
      if (conn.state === 'closed') return false;
      for (const group of groups) if (!removedMeanwhile.has(group)) index.join(conn, group);
      await firstOfUser; // so isOnline() is true on every replica once the client's start() resolves
      return true;
    } catch (err) {
      log.error({ err, connectionId: conn.id }, 'hub: resolving groups failed; connection refused');
      return false;
    } finally {
      joining.delete(conn);
    }
  }

  const onClosed = (conn: HubConnection) => {
    byId.delete(conn.id);
    joining.delete(conn);
    if (index.removeConnection(conn)) trackPresence('markOffline', presence.markOffline(conn.userId));
    metrics.connectionsActive.dec();
    metrics.connectionDuration.observe((monotonicMs() - conn.openedAt) / 1000);
    metrics.disconnects.inc({ reason: conn.closeReason ?? 'client_closed' });
    log.debug({ connectionId: conn.id, reason: conn.closeReason }, 'hub connection closed');
    if (byId.size === 0) for (const resolve of allClosed) resolve();
  };

  // Connections with queued frames, flushed together once the current burst of sends (e.g. a
  // dispatcher batch, which pushes without yielding to I/O) is done: one socket write each.
  let toFlush: HubConnection[] = [];
  const flushQueued = () => {
    const conns = toFlush;
    toFlush = [];
    const sent = new FrameTally();
    for (const conn of conns) conn.flush(sent);
    sent.countInto(metrics);
  };
  const onQueued = (conn: HubConnection) => {
    if (toFlush.push(conn) === 1) process.nextTick(flushQueued);
  };

  const onHandshake = (conn: HubConnection) => {
    void (ready.get(conn) ?? Promise.resolve(false)).then((ok) => {
      if (ok) conn.accept();
      else conn.refuse('The server could not load the groups of this connection.');
    });
  };

  const tickMs = Math.max(25, Math.floor(Math.min(pingIntervalMs, clientTimeoutMs) / 4));
  const liveness = setInterval(() => {
    const now = monotonicMs();
    const wallNow = Date.now(); // token expiry is wall-clock time, as the token verifier judges it
    for (const conn of [...byId.values()]) {
      conn.closeIfTokenExpired(wallNow);
      conn.checkLiveness(now, pingIntervalMs, clientTimeoutMs);
    }
  }, tickMs);
  liveness.unref();

  const refresh =
    presence.refreshIntervalMs === undefined
      ? undefined
      : setInterval(() => {
          const users = index.users();
          if (users.length > 0) void trackPresence('refresh', presence.refresh(users));
        }, presence.refreshIntervalMs);
  refresh?.unref();

  return {
    replicaId,
    get closing() {
      return closing;
    },

    async send(group, eventName, payload) {
      await backplane.publish({ kind: 'send', origin: replicaId, group, event: eventName, payload });
      deliverLocal(group, eventName, payload);
    },

    async addUserToGroup(userId, group) {
      joinLocal(userId, group);
      await backplane.publish({ kind: 'join', origin: replicaId, userId, group });
    },

    async removeUserFromGroup(userId, group) {
      leaveLocal(userId, group);
      await backplane.publish({ kind: 'leave', origin: replicaId, userId, group });
    },

    async isOnline(userId) {
      return index.ofUser(userId) !== undefined || (await presence.isOnline(userId));
    },

    health: () => backplane.health(),

    connectionCount: () => byId.size,

    async authenticate(token) {
      if (!token) {
        metrics.authFailures.inc();
        return { ok: false, code: 'AUTH_REQUIRED', message: 'a bearer token is required', statusCode: 401 };
      }
      try {
        return { ok: true, principal: await tokens.verify(token) };
      } catch (err) {
        metrics.authFailures.inc();
        if (err instanceof AuthError) return { ok: false, code: err.code, message: err.message, statusCode: err.statusCode };
        throw err;
      }
    },

    negotiate(principal, requestedVersion) {
      const connectionId = newId();
      const expiresAt = clock.now().getTime() + tokenTtlMs;
      const token = signConnectionToken({ connectionId, userId: principal.userId, expiresAt }, opts.secret);
      return negotiateReply(requestedVersion, connectionId, token);
    },

    connectionIdFor(principal, connectionToken) {
      if (connectionToken === undefined) return newId();
      const ticket = verifyConnectionToken(connectionToken, opts.secret, principal.userId, clock.now().getTime());
      // A token opens one connection at a time (ASP.NET Core's tokens are single-use).
      return ticket && !byId.has(ticket.connectionId) ? ticket.connectionId : undefined;
    },

    attach(socket, principal, connectionId) {
      if (closing) {
        socket.terminate();
        return;
      }
      const conn = new HubConnection(connectionId, principal, socket, limits, { onHandshake, onClosed, onQueued }, metrics);
      byId.set(conn.id, conn);
      metrics.connectionsActive.inc();
      const first = index.addConnection(conn);
      index.join(conn, userGroup(conn.userId));
      const firstOfUser = first ? trackPresence('markOnline', presence.markOnline(conn.userId)) : undefined;
      ready.set(conn, joinGroups(conn, firstOfUser));
      log.debug({ connectionId: conn.id, userId: conn.userId }, 'hub connection opened');
    },

    async close() {
      if (closing) return;
      closing = true;
      clearInterval(liveness);
      if (refresh) clearInterval(refresh);
      const conns = [...byId.values()];
      if (conns.length > 0) {
        const done = new Promise<void>((resolve) => allClosed.add(resolve));
        for (const conn of conns) conn.close('server_shutdown', CloseErrors.shutdown, true, 'graceful');
        const grace = setTimeout(() => {
          for (const conn of byId.values()) conn.socket.terminate();
        }, opts.closeGraceMs ?? 2000);
        await done;
        clearTimeout(grace);
      }
      await Promise.all(presenceWrites);
      await Promise.all([backplane.close(), presence.close()]);
      log.info({ connections: conns.length }, 'hub closed');
    },
  };
}
