import { Type } from '@sinclair/typebox';
import { Int, Bool, Duration, type SettingsOf } from '../types/index.ts';

/** The realtime hub: the Redis backplane and each socket's liveness and buffer limits. One TypeBox field per setting is its one source of default, bounds and unit (config.ts reads them from the environment). */
export const hubSettings = {
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://', examples: ['redis://127.0.0.1:16379'], description: 'Redis URL for the hub backplane' })),
  REALTIME_BACKPLANE_ENABLED: Bool(false, 'Carry hub group sends between replicas through Redis (needs REDIS_URL)'),
  // A setting, not a constant: the slow-consumer runbook raises it for legitimately bursty chats.
  HUB_MAX_BUFFERED_BYTES: Int({
    default: 1_048_576,
    minimum: 1024,
    description: 'Per-socket send buffer cap; past it the socket is closed as a slow consumer',
  }),
  HUB_MAX_CONNECTIONS_PER_USER: Int({
    default: 20,
    minimum: 1,
    maximum: 10_000,
    description:
      'Hub connections one user may hold on a replica, counted from a valid handshake request (more are refused with a handshake error); as many more may be waiting for theirs',
  }),
  HUB_MAX_CONNECTIONS: Int({
    default: 10_000,
    minimum: 1,
    maximum: 1_000_000,
    description: 'Hub sockets a replica holds, connections and sockets waiting for their handshake request; more are refused with a handshake error',
  }),
  // A setting, as ASP.NET Core's HubOptions.HandshakeTimeout: clients on slow networks may need longer.
  HUB_HANDSHAKE_TIMEOUT: Duration({
    default: '15s',
    minimum: '1s',
    maximum: '1m',
    description:
      "How long an upgraded hub socket may take to send its handshake request; past it the socket gets a handshake error and is closed. Until then it holds no place in its user's HUB_MAX_CONNECTIONS_PER_USER",
  }),
  HUB_MAX_CONNECTS_PER_SECOND: Int({
    default: 1000,
    minimum: 1,
    maximum: 1_000_000,
    description:
      'New hub connections a replica admits per second (one second of burst): a deploy refills HUB_MAX_CONNECTIONS in ~10 s; past it negotiate answers 503 with Retry-After and a socket is closed with a reconnect-allowed close message',
  }),
  HUB_MAX_CONNECTS_PER_USER_PER_SECOND: Int({
    default: 2,
    minimum: 1,
    maximum: 1_000_000,
    description:
      "New hub connections one user may start on a replica per second, with a burst of HUB_MAX_CONNECTIONS_PER_USER (every device reconnecting at once after a deploy); judged before HUB_MAX_CONNECTS_PER_SECOND, so one user's negotiate loop is refused (429 RATE_LIMITED with Retry-After) without taking other users' places",
  }),
  // Settings, not constants: a client with a chattier use of hub methods than Typing may need more.
  HUB_INVOCATIONS_PER_SECOND: Int({
    default: 10,
    minimum: 1,
    maximum: 1_000_000,
    description:
      'Hub method calls one connection may make per second, on average; past it (and its burst) a call is refused unrun with the completion error HUB_RATE_LIMITED, and a connection refused HUB_INVOCATION_BURST times within 10 s is closed with a close message naming the reason',
  }),
  HUB_INVOCATION_BURST: Int({
    default: 20,
    minimum: 1,
    maximum: 1_000_000,
    description: 'Hub method calls one connection may make at once before HUB_INVOCATIONS_PER_SECOND paces it',
  }),
};

export type HubSettings = SettingsOf<typeof hubSettings>;
