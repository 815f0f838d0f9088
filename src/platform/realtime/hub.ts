import type { WebSocket } from 'ws';
import type { Principal } from '../http/auth.ts';
import { createTokenVerifier } from '../http/token-verifier.ts';
import { newId, systemClock } from '../time.ts';
import { createInProcessBackplane } from './backplane.ts';
import { connectionRefusal, HubRefusal, startAccessRecheck, upgradeRefusal } from './access.ts';
import { createAdmission } from './hub-admission.ts';
import { createGroupDelivery } from './hub-delivery.ts';
import { hubDefaults, type Hub, type HubOptions } from './hub-api.ts';
import { createHubPresence } from './hub-presence.ts';
import { CloseErrors, HubConnection, monotonicMs, type ConnectionLimits } from './connection.ts';
import { answerHandshakeError, FORMATS, FrontDoor, HANDSHAKE_CANCELED, type HandshakeOutcome } from './handshake.ts';
import { GroupIndex, userGroup } from './groups.ts';
import { createHubMetrics } from './metrics.ts';
import { createInProcessPresence } from './presence.ts';
import { invokeHubMethod } from './hub-methods.ts';

export type { AuthResult, Hub, HubOptions } from './hub-api.ts';

/** How long a refused socket may take to send its handshake before it gets its refusal anyway (at most the handshake timeout). */
const REFUSAL_WAIT_MS = 5000;

/** Longest unterminated record kept between WebSocket messages: clients only send handshakes and pings. */
const MAX_PENDING_CHARS = 64 * 1024;

export function createHub(opts: HubOptions): Hub {
  const log = opts.logger.child({ component: 'hub' });
  const metrics = createHubMetrics(opts.registry);
  const backplane = opts.backplane ?? createInProcessBackplane();
  const replicaId = opts.replicaId ?? newId();
  const clock = opts.clock ?? systemClock;
  const pingIntervalMs = opts.pingIntervalMs ?? hubDefaults.pingIntervalMs;
  const clientTimeoutMs = opts.clientTimeoutMs ?? hubDefaults.clientTimeoutMs;
  const handshakeTimeoutMs = opts.handshakeTimeoutMs ?? hubDefaults.handshakeTimeoutMs;
  const refusalWaitMs = Math.min(REFUSAL_WAIT_MS, handshakeTimeoutMs);
  const limits: ConnectionLimits = { maxBufferedBytes: opts.maxBufferedBytes ?? hubDefaults.maxBufferedBytes, maxPendingChars: MAX_PENDING_CHARS };

  const index = new GroupIndex<HubConnection>();
  const byId = new Map<string, HubConnection>();
  const door = new FrontDoor({ maxBytes: MAX_PENDING_CHARS, gauge: metrics.handshakesPending });
  const store = opts.presence ?? createInProcessPresence();
  const presence = createHubPresence(store, { log, clock, holds: (userId) => index.ofUser(userId) !== undefined });
  /** Groups removed while a connection's resolveGroups was in flight: its (older) answer must not re-add them. */
  const joining = new Map<HubConnection, Set<string>>();
  const allClosed = new Set<() => void>();
  let closing = false;
  const admission = createAdmission({
    secret: opts.secret,
    tokens: opts.tokens ?? createTokenVerifier({ secret: opts.secret }),
    clock,
    connectionTokenTtlMs: opts.connectionTokenTtlMs ?? hubDefaults.connectionTokenTtlMs,
    maxConnectsPerSecond: opts.maxConnectsPerSecond,
    access: opts.access,
    metrics,
    isOpen: (connectionId) => byId.has(connectionId),
  });

  const delivery = createGroupDelivery({ index, joining, backplane, replicaId, resolveGroupMembers: opts.resolveGroupMembers, log, metrics });

  /** Resolves the connection's groups and joins them: true, or the reason the handshake is refused. */
  async function joinGroups(conn: HubConnection, firstOfUser: Promise<void> | undefined): Promise<true | string> {
    const removedMeanwhile = new Set<string>();
    joining.set(conn, removedMeanwhile);
    try {
      const groups = opts.resolveGroups ? await opts.resolveGroups(conn.principal) : [];
      if (conn.state === 'closed') return 'closed';
      for (const group of groups) if (!removedMeanwhile.has(group)) index.join(conn, group);
      await firstOfUser; // so isOnline() is true on every replica once the client's start() resolves
      return true;
    } catch (err) {
      if (err instanceof HubRefusal) {
        metrics.refused.inc({ reason: 'forbidden' });
        return err.message;
      }
      log.error({ err, connectionId: conn.id }, 'hub: resolving groups failed; connection refused');
      return 'The server could not load the groups of this connection.';
    } finally {
      joining.delete(conn);
    }
  }

  const onClosed = (conn: HubConnection) => {
    byId.delete(conn.id);
    joining.delete(conn);
    if (index.removeConnection(conn)) presence.lastClosed(conn.userId);
    metrics.connectionsActive.dec();
    metrics.connectionDuration.observe((monotonicMs() - conn.openedAt) / 1000);
    metrics.disconnects.inc({ reason: conn.closeReason ?? 'client_closed' });
    log.debug({ connectionId: conn.id, reason: conn.closeReason }, 'hub connection closed');
    if (byId.size === 0) for (const resolve of allClosed) resolve();
  };

  const methods = opts.methods ?? new Map();
  const onInvocation = (conn: HubConnection, call: { target: string; invocationId?: string; arguments: unknown[] }) => invokeHubMethod(methods, conn, call, log);

  /** A valid handshake request: the per-user cap is applied here, so sockets that never get this far hold no slot. */
  const open = (socket: WebSocket, principal: Principal, connectionId: string, request: Extract<HandshakeOutcome, { kind: 'request' }>) => {
    const format = FORMATS[request.protocol];
    const refusal = connectionRefusal({ ofUser: index.ofUser(principal.userId)?.size ?? 0, maxPerUser: opts.maxConnectionsPerUser });
    if (refusal) {
      metrics.refused.inc({ reason: refusal.reason });
      log.debug({ userId: principal.userId, reason: refusal.reason }, 'hub connection refused');
      return answerHandshakeError(socket, refusal.error, format.binary);
    }
    const hooks = { onClosed, onQueued: delivery.onQueued, onInvocation };
    const conn = new HubConnection(connectionId, principal, socket, { format, afterHandshake: request.rest }, limits, hooks, metrics);
    byId.set(conn.id, conn);
    metrics.connectionsActive.inc();
    const first = index.addConnection(conn);
    index.join(conn, userGroup(conn.userId));
    const firstOfUser = first ? presence.firstOpened(conn.userId) : undefined;
    void joinGroups(conn, firstOfUser).then((verdict) => (verdict === true ? conn.accept() : conn.refuse(verdict)));
    log.debug({ connectionId: conn.id, userId: conn.userId }, 'hub connection opened');
  };

  /** A socket the front door turned away before it became a connection, counted as a disconnect of its kind. */
  const notOpened = (outcome: Exclude<HandshakeOutcome, { kind: 'request' }>, userId: string) => {
    if (outcome.kind === 'gone') return;
    const reason = outcome.kind === 'timeout' ? 'handshake_timeout' : 'handshake_failed';
    metrics.disconnects.inc({ reason });
    log.debug({ userId, reason }, 'hub socket closed before its handshake');
  };

  const tickMs = Math.max(25, Math.floor(Math.min(pingIntervalMs, clientTimeoutMs) / 4));
  const liveness = setInterval(() => {
    const now = monotonicMs();
    const wallNow = Date.now(); // token expiry is wall-clock time, as the token verifier judges it
    for (const conn of [...byId.values()]) {
      conn.closeIfTokenExpired(wallNow);
      conn.checkLiveness(now, pingIntervalMs, clientTimeoutMs);
    }
    delivery.prune();
    admission.forgetExpiredTokens();
  }, tickMs);
  liveness.unref();

  // The safety net under the backplane's disconnect messages: a lost one is caught here.
  const { access } = opts;
  const recheck = access && startAccessRecheck(access, () => index.users(), delivery.disconnectLocal, log);

  const refresh =
    store.refreshIntervalMs === undefined
      ? undefined
      : setInterval(() => {
          const users = index.users();
          if (users.length > 0) presence.refresh(users);
        }, store.refreshIntervalMs);
  refresh?.unref();

  return {
    replicaId,
    get closing() {
      return closing;
    },

    send: delivery.send,
    disconnectUser: delivery.disconnectUser,
    addUserToGroup: delivery.addUserToGroup,
    removeUserFromGroup: delivery.removeUserFromGroup,

    isOnline: (userId) => presence.isOnline(userId),
    presenceOf: (userIds) => presence.presenceOf(userIds),
    onPresenceChange: (listener) => presence.onChange(listener),

    health: () => backplane.health(),

    connectionCount: () => byId.size,

    authenticate: admission.authenticate,
    negotiate: admission.negotiate,
    admitConnect: admission.admitConnect,
    connectionIdFor: admission.connectionIdFor,

    turnAway(socket, principal, retryAfterSeconds) {
      door.turnAway(socket, principal.userId, `Server is busy: too many new connections; reconnect in ${retryAfterSeconds} s.`, refusalWaitMs);
    },

    attach(socket, principal, connectionId) {
      if (closing) {
        socket.terminate();
        return;
      }
      const { userId } = principal;
      const refusal = upgradeRefusal({
        waitingOfUser: door.waitingOf(userId),
        onReplica: byId.size + door.size,
        maxPerUser: opts.maxConnectionsPerUser,
        maxOnReplica: opts.maxConnections,
      });
      if (refusal) {
        metrics.refused.inc({ reason: refusal.reason });
        log.debug({ userId, reason: refusal.reason }, 'hub connection refused');
        return door.refuse(socket, userId, refusal.error, refusalWaitMs);
      }
      door.wait(socket, userId, { timeoutMs: handshakeTimeoutMs, timeoutError: HANDSHAKE_CANCELED }, (outcome) => {
        if (outcome.kind !== 'request') return notOpened(outcome, userId);
        open(socket, principal, connectionId, outcome);
      });
    },

    async close() {
      if (closing) return;
      closing = true;
      clearInterval(liveness);
      if (refresh) clearInterval(refresh);
      if (recheck) clearInterval(recheck);
      door.shut(CloseErrors.shutdown);
      const conns = [...byId.values()];
      if (conns.length > 0) {
        const done = new Promise<void>((resolve) => allClosed.add(resolve));
        for (const conn of conns) conn.close('server_shutdown', CloseErrors.shutdown, true, 'graceful');
        const grace = setTimeout(() => {
          for (const conn of byId.values()) conn.socket.terminate();
        }, opts.closeGraceMs ?? hubDefaults.closeGraceMs);
        await done;
        clearTimeout(grace);
      }
      await Promise.all([backplane.close(), presence.close()]);
      log.info({ connections: conns.length }, 'hub closed');
    },
  };
}
