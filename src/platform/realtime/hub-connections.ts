import type { WebSocket } from 'ws';
import type { Principal } from '../http/auth.ts';
import type { Logger } from '../observability/logger.ts';
import { connectionRefusal, HubRefusal, upgradeRefusal } from './access.ts';
import { CloseErrors, HubConnection, monotonicMs, type ConnectionHooks, type ConnectionLimits } from './connection.ts';
import { GroupIndex, userGroup } from './groups.ts';
import { answerHandshakeError, FORMATS, FrontDoor, HANDSHAKE_CANCELED, type HandshakeOutcome } from './handshake.ts';
import type { HubOptions } from './hub-api.ts';
import { invokeHubMethod } from './hub-methods.ts';
import { createInvocationBudget } from './invocation-budget.ts';
import type { HubPresence } from './hub-presence.ts';
import type { HubMetrics } from './metrics.ts';
import { REALTIME_DEFAULTS } from './defaults.ts';

/**
 * A socket's way through the hub, from its upgrade to its close: the caps judged at the upgrade,
 * the wait for its handshake request at the front door (handshake.ts), the per-user cap at a valid
 * request, the connection it becomes (connection.ts) joining its groups before the handshake is
 * answered, and the bookkeeping when it closes. Shutdown closes them all.
 */

export interface HubConnectionsOptions extends Pick<HubOptions, 'resolveGroups' | 'methods' | 'invocationBudget' | 'maxConnectionsPerUser' | 'maxConnections'> {
  index: GroupIndex<HubConnection>;
  /** Connections whose groups are still being resolved, with the groups they left meanwhile (hub-delivery.ts). */
  joining: Map<HubConnection, Set<string>>;
  presence: HubPresence;
  handshakeTimeoutMs: number;
  maxBufferedBytes: number;
  /** A connection queued a frame (hub-delivery.ts flushes it once the burst is done). */
  onQueued(conn: HubConnection): void;
  log: Logger;
  metrics: HubMetrics;
}

export function createHubConnections(o: HubConnectionsOptions) {
  const { index, joining, presence, log, metrics } = o;
  const refusalWaitMs = Math.min(REALTIME_DEFAULTS.hubRefusalWaitMs, o.handshakeTimeoutMs);
  const limits: ConnectionLimits = { maxBufferedBytes: o.maxBufferedBytes, maxPendingChars: REALTIME_DEFAULTS.hubMaxPendingChars };
  const byId = new Map<string, HubConnection>();
  const door = new FrontDoor({ maxBytes: REALTIME_DEFAULTS.hubMaxPendingChars, gauge: metrics.handshakesPending });
  const allClosed = new Set<() => void>();
  const methods = o.methods ?? new Map();
  const withinBudget = o.invocationBudget ? createInvocationBudget(o.invocationBudget, metrics) : () => true;

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

  const hooks: ConnectionHooks = {
    onClosed,
    onQueued: o.onQueued,
    onInvocation: (conn, call) => {
      if (withinBudget(conn, call.invocationId)) invokeHubMethod(methods, conn, call, log, metrics);
    },
  };

  /** A valid handshake request: the per-user cap is applied here, so sockets that never get this far hold no slot. */
  const open = (socket: WebSocket, principal: Principal, connectionId: string, request: Extract<HandshakeOutcome, { kind: 'request' }>) => {
    const format = FORMATS[request.protocol];
    const refusal = connectionRefusal({ ofUser: index.ofUser(principal.userId)?.size ?? 0, maxPerUser: o.maxConnectionsPerUser });
    if (refusal) {
      metrics.refused.inc({ reason: refusal.reason });
      log.debug({ userId: principal.userId, reason: refusal.reason }, 'hub connection refused');
      return answerHandshakeError(socket, refusal.error, format.binary);
    }
    const conn = new HubConnection(connectionId, principal, socket, { format, afterHandshake: request.rest }, limits, hooks, metrics);
    byId.set(conn.id, conn);
    metrics.connectionsActive.inc();
    const first = index.addConnection(conn);
    index.join(conn, userGroup(conn.userId));
    const firstOfUser = first ? presence.firstOpened(conn.userId) : undefined;
    void joinGroups(o, conn, firstOfUser).then((verdict) => (verdict === true ? conn.accept() : conn.refuse(verdict)));
    log.debug({ connectionId: conn.id, userId: conn.userId }, 'hub connection opened');
  };

  /** A socket the front door turned away before it became a connection, counted as a disconnect of its kind. */
  const notOpened = (outcome: Exclude<HandshakeOutcome, { kind: 'request' }>, userId: string) => {
    if (outcome.kind === 'gone') return;
    const reason = outcome.kind === 'timeout' ? 'handshake_timeout' : 'handshake_failed';
    metrics.disconnects.inc({ reason });
    log.debug({ userId, reason }, 'hub socket closed before its handshake');
  };

  return {
    /** The open connections of this replica (from a valid handshake request until the socket closes). */
    byId: byId as ReadonlyMap<string, HubConnection>,

    /** An upgraded socket: refused at a cap, or waiting at the front door for its handshake request. */
    attach(socket: WebSocket, principal: Principal, connectionId: string): void {
      const { userId } = principal;
      const refusal = upgradeRefusal({
        waitingOfUser: door.waitingOf(userId),
        onReplica: byId.size + door.size,
        maxPerUser: o.maxConnectionsPerUser,
        maxOnReplica: o.maxConnections,
      });
      if (refusal) {
        metrics.refused.inc({ reason: refusal.reason });
        log.debug({ userId, reason: refusal.reason }, 'hub connection refused');
        return door.refuse(socket, userId, refusal.error, refusalWaitMs);
      }
      door.wait(socket, userId, { timeoutMs: o.handshakeTimeoutMs, timeoutError: HANDSHAKE_CANCELED }, (outcome) => {
        if (outcome.kind !== 'request') return notOpened(outcome, userId);
        open(socket, principal, connectionId, outcome);
      });
    },

    turnAway(socket: WebSocket, principal: Principal, retryAfterSeconds: number): void {
      door.turnAway(socket, principal.userId, `Server is busy: too many new connections; reconnect in ${retryAfterSeconds} s.`, refusalWaitMs);
    },

    /**
     * Answers the sockets waiting at the front door and closes every connection with the shutdown
     * message. `allClosed` settles once they are gone (dropped after `graceMs`); undefined when none was open.
     */
    shutdown(graceMs: number): { connections: number; allClosed: Promise<void> | undefined } {
      door.shut(CloseErrors.shutdown);
      const conns = [...byId.values()];
      if (conns.length === 0) return { connections: 0, allClosed: undefined };
      const done = new Promise<void>((resolve) => allClosed.add(resolve));
      for (const conn of conns) conn.close('server_shutdown', CloseErrors.shutdown, true, 'graceful');
      const grace = setTimeout(() => {
        for (const conn of byId.values()) conn.socket.terminate();
      }, graceMs);
      return { connections: conns.length, allClosed: done.then(() => clearTimeout(grace)) };
    },
  };
}

/** Resolves the connection's groups and joins them: true, or the reason the handshake is refused. */
async function joinGroups(o: HubConnectionsOptions, conn: HubConnection, firstOfUser: Promise<void> | undefined): Promise<true | string> {
  const { index, joining, metrics, log } = o;
  const removedMeanwhile = new Set<string>();
  joining.set(conn, removedMeanwhile);
  try {
    const groups = o.resolveGroups ? await o.resolveGroups(conn.principal) : [];
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
