import { defineDefaults } from '../types/index.ts';
import { DAY_MS, MINUTE_MS, SECOND_MS } from '../time.ts';

/**
 * Every default of the realtime hub, in one place: the settings' (settings.ts shows them to
 * operators) and the fixed values only a developer tunes (a test shortens one through buildApp's
 * `tuning`, or createHub's options). Protocol facts (the record separator, close codes) are not
 * defaults and stay with the protocol.
 */
export const REALTIME_DEFAULTS = defineDefaults({
  // Settings' defaults.
  /** Per-socket send buffer cap (once HUB_MAX_BUFFERED_BYTES); past it the socket is closed as a slow consumer. */
  hubMaxBufferedBytes: 1_048_576,
  /** HUB_MAX_CONNECTIONS_PER_USER (also the burst of a user's connects). */
  hubMaxConnectionsPerUser: 20,
  /** HUB_MAX_CONNECTIONS: sockets a replica holds. */
  hubMaxConnections: 10_000,
  /** HUB_MAX_CONNECTS_PER_SECOND: a deploy refills HUB_MAX_CONNECTIONS in ~10 s. */
  hubMaxConnectsPerSecond: 1000,
  /** HUB_INVOCATIONS_PER_SECOND: a connection's hub method calls per second on average. */
  hubInvocationsPerSecond: 10,

  // Fixed values.
  /** A connection may call hub methods this many seconds' worth at once: the burst is twice the rate (once HUB_INVOCATION_BURST, 20). */
  hubInvocationBurstSeconds: 2,
  /** A user's connections share a budget of this many connections' (a phone and a laptop typing at once). */
  hubUserInvocationShare: 2,
  /** A connection refused its calls this many times within hubInvocationRefusalWindowMs is closed. */
  hubInvocationRefusalWindowMs: 10 * SECOND_MS,
  /** New connections one user may start per second, with a burst of HUB_MAX_CONNECTIONS_PER_USER (once HUB_MAX_CONNECTS_PER_USER_PER_SECOND). */
  hubUserConnectsPerSecond: 2,
  /** ASP.NET Core's HubOptions.HandshakeTimeout: an upgraded socket sends its handshake request within this (once HUB_HANDSHAKE_TIMEOUT). */
  hubHandshakeTimeoutMs: 15 * SECOND_MS,
  /** A refused socket that sends no handshake gets its handshake error after at most this. */
  hubRefusalWaitMs: 5 * SECOND_MS,
  /** SignalR ping (type 6): sent to a hub socket the server has not written to for this long (the SignalR default). */
  hubPingIntervalMs: 15 * SECOND_MS,
  /** A socket that sent nothing, not even a ping, this long is closed as dead: twice the official clients' 15 s keep-alive (once HUB_CLIENT_TIMEOUT_MS). */
  hubClientTimeoutMs: 30 * SECOND_MS,
  /** Safety net for lost backplane messages: a replica asks this often whether its connected users are still allowed (once HUB_ACCESS_RECHECK_INTERVAL_MS). */
  hubAccessRecheckIntervalMs: 1 * MINUTE_MS,
  /**
   * A negotiate's connection token opens a WebSocket within this (once): a client opens its socket
   * right after negotiating, and only this replica remembers that a token was used.
   */
  hubConnectionTokenTtlMs: 15 * SECOND_MS,
  /** How long close() waits for sockets to finish their close handshake before dropping them. */
  hubCloseGraceMs: 2 * SECOND_MS,
  /** Frames queued for one socket are written together once they pass this many bytes. */
  hubFlushAtBytes: 64 * 1024,
  /** A socket's unparsed input (a record not yet ended) is cut off past this many characters. */
  hubMaxPendingChars: 64 * 1024,
  /** A client message larger than this closes its connection. */
  hubMaxClientMessageBytes: 64 * 1024,
  /** Connects of one event-loop turn whose lookups go in one call, at most. */
  hubTickBatchMax: 500,
  /** A negotiate body is read and dropped up to this many bytes. */
  hubNegotiateBodyLimit: 4096,
  /** Users whose connect share or invocation budget, or last-seen time, is remembered in memory per replica. */
  hubUsersKept: 100_000,
  /** A user's last-seen time is kept this long in Redis. */
  hubLastSeenKeepMs: 30 * DAY_MS,
  /** A backplane or presence command Redis has not answered by then fails (a hung connection must not hang a push). */
  redisCommandTimeoutMs: 2 * SECOND_MS,
  /** How long start-up waits for Redis before going on without it (it keeps reconnecting). */
  redisConnectTimeoutMs: 5 * SECOND_MS,
  /** The backplane's one pub/sub channel, and the prefix of the presence keys. */
  hubRedisChannel: 'pin:hub:messenger',
  hubRedisKeyPrefix: 'pin:hub:',
  /** A replica's presence claim expires after this unless refreshed (every replica uses the same). */
  hubPresenceTtlMs: 1 * MINUTE_MS,
  /** Users per presence command. */
  hubPresenceChunk: 500,
});

export type RealtimeDefaults = typeof REALTIME_DEFAULTS;

/** The hub's fixed values as buildApp takes them (a test shortens one). */
export type RealtimeTuning = Pick<
  RealtimeDefaults,
  'hubPingIntervalMs' | 'hubHandshakeTimeoutMs' | 'hubUserConnectsPerSecond' | 'hubInvocationBurstSeconds' | 'redisCommandTimeoutMs' | 'hubMaxBufferedBytes'
>;

/** The one check of the hub's options, at construction (createHub): every duration and limit given is a positive number. */
export function hubOptionsProblems(o: Record<string, unknown>): string[] {
  const limits = ['maxConnectionsPerUser', 'maxConnections', 'maxConnectsPerSecond', 'pingIntervalMs', 'handshakeTimeoutMs', 'clientTimeoutMs', 'maxBufferedBytes', 'connectionTokenTtlMs'];
  return limits.filter((k) => o[k] !== undefined && !(typeof o[k] === 'number' && o[k] > 0)).map((k) => `hub option ${k}: must be > 0 (got ${String(o[k])})`);
}
