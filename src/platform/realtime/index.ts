/**
 * The realtime hub: SignalR JSON and MessagePack hub protocols (versions 0 and 1) over
 * @fastify/websocket at /hubs/messenger; the protocol rules it follows are in docs/realtime.md.
 *
 * - `POST /hubs/messenger/negotiate` (negotiate version 1, or 0 when asked; WebSockets, Text and Binary)
 *   and the WebSocket at `/hubs/messenger` (`?id=<connectionToken>`, or no id when the client skips
 *   negotiation). The JWT comes in `Authorization: Bearer` or `?access_token=`; a missing or invalid
 *   token gets HTTP 401 `{ code, message }` before the upgrade.
 * - Every connection joins `user:{UserId}` plus whatever `resolveGroups(principal)` returns; the
 *   handshake response is sent only after that, so once a client's start() resolves it is in all
 *   its groups (and isOnline() is true on every replica).
 * - Client invocations: modules register the methods clients may call (hub-methods.ts; the
 *   messenger's Typing); a HubRefusal thrown by one is its completion error. Any other name
 *   expecting an answer gets "Unknown hub method 'X'", fire-and-forget calls of it are ignored; a
 *   stream invocation is refused (no method streams). Each connection has a budget of calls
 *   (HUB_INVOCATIONS_PER_SECOND, a burst of twice that; invocation-budget.ts): past it a call is
 *   refused unrun, and a connection that keeps going is closed. A malformed or oversized record or
 *   frame closes the connection (close message, allowReconnect false).
 * - Presence (hub-presence.ts): online while any replica holds one of the user's connections;
 *   onPresenceChange listeners hear the flips (first connection anywhere, last one anywhere closed).
 * - Frames pushed before a connection's handshake completes are not queued for it (it refills
 *   from REST like after any gap).
 * - Liveness: a ping (type 6) goes to a socket the server has not written to for
 *   REALTIME_DEFAULTS.hubPingIntervalMs (15 s); a socket that sent nothing for hubClientTimeoutMs, 30 s (the official client
 *   pings every 15 s) is closed. WebSocket-level pongs do not count as activity.
 * - Slow consumers: a frame that would take the socket's send buffer past its cap (REALTIME_DEFAULTS.hubMaxBufferedBytes)
 *   closes it instead (close message "slow consumer", best effort, then the TCP connection dropped).
 * - The front door (handshake.ts): an upgraded socket is a connection only once its handshake
 *   request is read and valid. A malformed request (a lone record separator too) gets a handshake
 *   error, and one not sent within REALTIME_DEFAULTS.hubHandshakeTimeoutMs (15 s) gets "Handshake was canceled.", both
 *   closed (hub_disconnects_total{reason="handshake_failed"|"handshake_timeout"}).
 * - Caps: a socket past HUB_MAX_CONNECTIONS (every socket: connections and waiting handshakes) or
 *   HUB_MAX_CONNECTIONS_PER_USER (this replica, connections from a valid handshake request on; as
 *   many more may be waiting for theirs) gets a handshake error naming the cap and is closed
 *   (hub_connections_refused_total{reason}). A refused socket that sends no handshake gets it anyway.
 *   New connections are admitted at each user's share (REALTIME_DEFAULTS.hubUserConnectsPerSecond; 429)
 *   first, then at the replica's HUB_MAX_CONNECTS_PER_SECOND (503), hub-admission.ts.
 * - Record-level access: sends to versioned groups are checked against the group's membership at
 *   delivery on every replica (membership.ts); a module can refuse a connection (HubRefusal),
 *   close a user's connections everywhere (disconnectUser) and is asked periodically which
 *   connected users lost access (access.ts).
 */
import type { Principal } from '../http/auth.ts';
import type { TokenVerifier } from '../http/token-verifier.ts';
import type { Logger } from '../observability/logger.ts';
import type { Registry } from '../observability/metrics.ts';
import type { Clock } from '../time.ts';
import { newId } from '../time.ts';
import { createRedisBackplane } from './backplane-redis.ts';
import type { HubAccess } from './access.ts';
import type { HubMethod } from './hub-methods.ts';
import { createHub, type Hub } from './hub.ts';
import type { ResolveGroupMembers } from './membership.ts';
import { createRedisPresence } from './presence-redis.ts';
import type { HubSettings } from './settings.ts';
import { REALTIME_DEFAULTS, type RealtimeTuning } from './defaults.ts';

export { createHub, type Hub, type HubOptions } from './hub.ts';
export type { PresenceChange } from './hub-api.ts';
export { hubPlugin, type HubPluginOptions } from './plugin.ts';
export { hubSettings, type HubSettings } from './settings.ts';
export { REALTIME_DEFAULTS, type RealtimeTuning } from './defaults.ts';
export { userGroup } from './groups.ts';
export { HubRefusal, type HubAccess } from './access.ts';
export { tickBatcher } from './tick-batch.ts';
export type { HubCaller, HubMethod } from './hub-methods.ts';
export type { GroupMembers, ResolveGroupMembers } from './membership.ts';
export { createInProcessBackplane, type Backplane, type BackplaneMessage, type BackplaneStatus } from './backplane.ts';
export { createRedisBackplane } from './backplane-redis.ts';
export { createInProcessPresence, type PresenceStore } from './presence.ts';
export { createRedisPresence } from './presence-redis.ts';

export interface HubDeps {
  registry: Registry;
  logger: Logger;
  resolveGroups?: (principal: Principal) => Promise<Iterable<string>>;
  resolveGroupMembers?: ResolveGroupMembers;
  /** Asked every REALTIME_DEFAULTS.hubAccessRecheckIntervalMs (the list may grow after the hub is created). */
  accessChecks?: readonly HubAccess[];
  /** Client-callable methods (the map may grow after the hub is created). */
  methods?: ReadonlyMap<string, HubMethod>;
  clock?: Clock;
  /** The verifier REST uses, so both accept the same tokens. */
  tokens?: TokenVerifier;
}

/**
 * The hub as the settings describe it: Redis backplane and presence when REALTIME_BACKPLANE_ENABLED
 * (loadConfig guarantees REDIS_URL then), in-process otherwise. Register it with
 * `app.register(hubPlugin, { hub })`.
 */
export async function createHubFromConfig(
  config: HubSettings & { JWT_SECRET: string },
  deps: HubDeps,
  tuning: RealtimeTuning = REALTIME_DEFAULTS,
): Promise<Hub> {
  const replicaId = newId();
  const redisUrl = config.REALTIME_BACKPLANE_ENABLED ? config.REDIS_URL : undefined;
  const [backplane, presence] = redisUrl
    ? await Promise.all([
        createRedisBackplane({ redisUrl, logger: deps.logger, commandTimeoutMs: tuning.redisCommandTimeoutMs }),
        createRedisPresence({ redisUrl, replicaId, logger: deps.logger, commandTimeoutMs: tuning.redisCommandTimeoutMs }),
      ])
    : [undefined, undefined];
  deps.logger.info(
    { backplane: redisUrl ? 'redis' : 'in-process', replicaId },
    redisUrl ? 'hub backplane: Redis' : 'hub backplane: in-process (single replica only)',
  );
  return createHub({
    secret: config.JWT_SECRET,
    tokens: deps.tokens,
    registry: deps.registry,
    logger: deps.logger,
    resolveGroups: deps.resolveGroups,
    resolveGroupMembers: deps.resolveGroupMembers,
    ...(deps.methods ? { methods: deps.methods } : {}),
    ...(deps.accessChecks ? { access: { checks: deps.accessChecks, intervalMs: REALTIME_DEFAULTS.hubAccessRecheckIntervalMs } } : {}),
    maxConnectionsPerUser: config.HUB_MAX_CONNECTIONS_PER_USER,
    maxConnections: config.HUB_MAX_CONNECTIONS,
    maxConnectsPerSecond: config.HUB_MAX_CONNECTS_PER_SECOND,
    userConnectShare: { perSecond: tuning.hubUserConnectsPerSecond, burst: config.HUB_MAX_CONNECTIONS_PER_USER },
    invocationBudget: { perSecond: config.HUB_INVOCATIONS_PER_SECOND, burst: config.HUB_INVOCATIONS_PER_SECOND * tuning.hubInvocationBurstSeconds },
    pingIntervalMs: tuning.hubPingIntervalMs,
    clientTimeoutMs: REALTIME_DEFAULTS.hubClientTimeoutMs,
    handshakeTimeoutMs: tuning.hubHandshakeTimeoutMs,
    maxBufferedBytes: tuning.hubMaxBufferedBytes,
    backplane,
    presence,
    replicaId,
    clock: deps.clock,
  });
}
