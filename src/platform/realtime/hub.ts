import { createTokenVerifier } from '../http/token-verifier.ts';
import { newId, systemClock } from '../time.ts';
import { createInProcessBackplane } from './backplane.ts';
import type { HubConnection } from './connection.ts';
import { GroupIndex } from './groups.ts';
import { createAdmission } from './hub-admission.ts';
import type { Hub, HubOptions } from './hub-api.ts';
import { hubOptionsProblems, REALTIME_DEFAULTS as D } from './defaults.ts';
import { createHubConnections } from './hub-connections.ts';
import { createGroupDelivery } from './hub-delivery.ts';
import { createHubPresence } from './hub-presence.ts';
import { startHubTimers } from './hub-timers.ts';
import { createHubMetrics } from './metrics.ts';
import { createInProcessPresence } from './presence.ts';

export type { AuthResult, Hub, HubOptions } from './hub-api.ts';

/**
 * The hub, assembled from its parts: token admission (hub-admission.ts), a socket's way from its
 * upgrade to its close (hub-connections.ts), group delivery and the backplane (hub-delivery.ts),
 * presence (hub-presence.ts) and the timers (hub-timers.ts). They share this replica's group
 * index and the connections still resolving their groups.
 */
export function createHub(opts: HubOptions): Hub {
  // The one check at construction: options built in code are held to what the settings' bounds hold.
  const problems = hubOptionsProblems({ ...opts });
  if (problems.length > 0) throw new Error(`invalid hub options: ${problems.join('; ')}`);
  const log = opts.logger.child({ component: 'hub' });
  const metrics = createHubMetrics(opts.registry);
  const backplane = opts.backplane ?? createInProcessBackplane();
  const replicaId = opts.replicaId ?? newId();
  const clock = opts.clock ?? systemClock;

  const index = new GroupIndex<HubConnection>();
  /** Groups removed while a connection's resolveGroups was in flight: its (older) answer must not re-add them. */
  const joining = new Map<HubConnection, Set<string>>();
  const store = opts.presence ?? createInProcessPresence();
  const presence = createHubPresence(store, { log, clock, holds: (userId) => index.ofUser(userId) !== undefined });
  const delivery = createGroupDelivery({ index, joining, backplane, replicaId, resolveGroupMembers: opts.resolveGroupMembers, log, metrics });
  const connections = createHubConnections({
    index,
    joining,
    presence,
    resolveGroups: opts.resolveGroups,
    methods: opts.methods,
    invocationBudget: opts.invocationBudget,
    maxConnectionsPerUser: opts.maxConnectionsPerUser,
    maxConnections: opts.maxConnections,
    handshakeTimeoutMs: opts.handshakeTimeoutMs ?? D.hubHandshakeTimeoutMs,
    maxBufferedBytes: opts.maxBufferedBytes ?? D.hubMaxBufferedBytes,
    onQueued: delivery.onQueued,
    log,
    metrics,
  });
  const admission = createAdmission({
    secret: opts.secret,
    tokens: opts.tokens ?? createTokenVerifier({ secret: opts.secret }),
    clock,
    connectionTokenTtlMs: opts.connectionTokenTtlMs ?? D.hubConnectionTokenTtlMs,
    maxConnectsPerSecond: opts.maxConnectsPerSecond,
    userConnectShare: opts.userConnectShare,
    access: opts.access,
    metrics,
    isOpen: (connectionId) => connections.byId.has(connectionId),
  });
  const timers = startHubTimers({
    pingIntervalMs: opts.pingIntervalMs ?? D.hubPingIntervalMs,
    clientTimeoutMs: opts.clientTimeoutMs ?? D.hubClientTimeoutMs,
    connections: connections.byId,
    pruneGroups: delivery.prune,
    forgetExpiredTokens: admission.forgetExpiredTokens,
    users: () => index.users(),
    access: opts.access,
    disconnectLocal: delivery.disconnectLocal,
    presence,
    presenceRefreshMs: store.refreshIntervalMs,
    log,
  });
  let closing = false;

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

    connectionCount: () => connections.byId.size,

    authenticate: admission.authenticate,
    negotiate: admission.negotiate,
    admitConnect: admission.admitConnect,
    connectionIdFor: admission.connectionIdFor,

    attach(socket, principal, connectionId) {
      if (closing) {
        socket.terminate();
        return;
      }
      connections.attach(socket, principal, connectionId);
    },

    turnAway: connections.turnAway,

    async close() {
      if (closing) return;
      closing = true;
      timers.stop();
      const { connections: count, allClosed } = connections.shutdown(opts.closeGraceMs ?? D.hubCloseGraceMs);
      if (allClosed) await allClosed;
      await Promise.all([backplane.close(), presence.close()]);
      log.info({ connections: count }, 'hub closed');
    },
  };
}
