import { Type } from '@sinclair/typebox';
import { Int, Bool, type SettingsOf } from '../types/index.ts';
import { REALTIME_DEFAULTS as D } from './defaults.ts';

/** The realtime hub: the Redis backplane and each socket's liveness and buffer limits. One TypeBox field per setting is its one source of default, bounds and unit (config.ts reads them from the environment). */
export const hubSettings = {
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://', examples: ['redis://127.0.0.1:16379'], description: 'Redis URL for the hub backplane' })),
  REALTIME_BACKPLANE_ENABLED: Bool(false, 'Carry hub group sends between replicas through Redis (needs REDIS_URL)'),
  HUB_MAX_CONNECTIONS_PER_USER: Int({
    default: D.hubMaxConnectionsPerUser,
    minimum: 1,
    maximum: 10_000,
    description:
      'Hub connections one user may hold on a replica, counted from a valid handshake request (more are refused with a handshake error); as many more may be waiting for theirs',
  }),
  HUB_MAX_CONNECTIONS: Int({
    default: D.hubMaxConnections,
    minimum: 1,
    maximum: 1_000_000,
    description: 'Hub sockets a replica holds, connections and sockets waiting for their handshake request; more are refused with a handshake error',
  }),
  HUB_MAX_CONNECTS_PER_SECOND: Int({
    default: D.hubMaxConnectsPerSecond,
    minimum: 1,
    maximum: 1_000_000,
    description:
      'New hub connections a replica admits per second (one second of burst): a deploy refills HUB_MAX_CONNECTIONS in ~10 s; past it negotiate answers 503 with Retry-After and a socket is closed with a reconnect-allowed close message',
  }),
  // A setting, not a constant: a client with a chattier use of hub methods than Typing may need more (the burst follows it).
  HUB_INVOCATIONS_PER_SECOND: Int({
    default: D.hubInvocationsPerSecond,
    minimum: 1,
    maximum: 1_000_000,
    description:
      'Hub method calls one connection may make per second, on average; past it (and its burst of twice the rate) a call is refused unrun with the completion error HUB_RATE_LIMITED, and a connection refused as many times as its burst within 10 s is closed with a close message naming the reason',
  }),
};

export type HubSettings = SettingsOf<typeof hubSettings>;
