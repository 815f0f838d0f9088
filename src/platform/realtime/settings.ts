import { Type } from '@sinclair/typebox';
import { Duration, Int, Bool, type SettingsOf } from '../types/index.ts';

/** The realtime hub: the Redis backplane and each socket's liveness and buffer limits. One TypeBox field per setting is its one source of default, bounds and unit (config.ts reads them from the environment). */
export const hubSettings = {
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://', examples: ['redis://127.0.0.1:16379'], description: 'Redis URL for the hub backplane' })),
  REALTIME_BACKPLANE_ENABLED: Bool(false, 'Carry hub group sends between replicas through Redis (needs REDIS_URL)'),
  REDIS_COMMAND_TIMEOUT: Duration({
    default: '2s',
    minimum: '10ms',
    description: 'A backplane or presence command Redis has not answered by then fails (a hung connection must not hang a push)',
  }),
  HUB_PING_INTERVAL: Duration({ default: '15s', minimum: '100ms', description: 'SignalR ping (type 6) interval' }),
  HUB_MAX_BUFFERED_BYTES: Int({
    default: 1_048_576,
    minimum: 1024,
    description: 'Per-socket send buffer cap; past it the socket is closed as a slow consumer',
  }),
  HUB_MAX_CONNECTIONS_PER_USER: Int({
    default: 20,
    minimum: 1,
    maximum: 10_000,
    description: "Open hub sockets one user may hold on a replica; more are refused with a handshake error",
  }),
  HUB_MAX_CONNECTIONS: Int({
    default: 10_000,
    minimum: 1,
    maximum: 1_000_000,
    description: 'Open hub sockets a replica accepts; more are refused with a handshake error',
  }),
  HUB_MAX_CONNECTS_PER_SECOND: Int({
    default: 1000,
    minimum: 1,
    maximum: 1_000_000,
    description:
      'New hub connections a replica admits per second (one second of burst): a deploy refills HUB_MAX_CONNECTIONS in ~10 s; past it negotiate answers 503 with Retry-After and a socket is closed with a reconnect-allowed close message',
  }),
};

export type HubSettings = SettingsOf<typeof hubSettings>;

/** For the Redis clients built outside loadConfig (tests, tools): the setting's own default. */
export const REDIS_COMMAND_TIMEOUT_DEFAULT_MS: number = hubSettings.REDIS_COMMAND_TIMEOUT.default;
