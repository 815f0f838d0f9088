import type { WebSocket } from 'ws';
import type { AuthCode, Principal } from '../http/auth.ts';
import type { TokenVerifier } from '../http/token-verifier.ts';
import type { Logger } from '../observability/logger.ts';
import type { Registry } from '../observability/metrics.ts';
import type { Clock } from '../time.ts';
import type { HubAccess } from './access.ts';
import type { BucketRate } from './rate-buckets.ts';
import type { Backplane, BackplaneStatus } from './backplane.ts';
import type { ResolveGroupMembers } from './membership.ts';
import type { PresenceStore } from './presence.ts';
import type { HubMethod } from './hub-methods.ts';
import type { NegotiateReply } from './protocol.ts';

/** What the hub takes and what it offers (hub.ts builds it). */

export interface PresenceChange {
  userId: string;
  online: boolean;
  /** When the user went offline; null when they came online. */
  lastSeenAt: Date | null;
}

export interface HubOptions {
  /** JWT secret (same as REST); keys the negotiate connection tokens (and verifies bearer tokens when no `tokens` is given). */
  secret: string;
  /** The bearer token verifier REST uses (AUTH_JWKS_URL, issuer, audience, lifetime); default: HS256 with `secret`. */
  tokens?: TokenVerifier;
  registry: Registry;
  logger: Logger;
  /**
   * Groups a new connection joins besides `user:{UserId}` (the messenger lists `chat:{ChatId}`).
   * Throwing a HubRefusal refuses the connection with its reason (e.g. the user is blocked).
   */
  resolveGroups?: (principal: Principal) => Promise<Iterable<string>>;
  /** The members of a group whose sends carry a membership version (membership.ts). */
  resolveGroupMembers?: ResolveGroupMembers;
  /** Each check is asked every `intervalMs` which connected users lost access; their connections are closed. */
  access?: { checks: readonly HubAccess[]; intervalMs: number };
  /** Methods clients may call, by name (modules add theirs; an unknown name is answered with an error). */
  methods?: ReadonlyMap<string, HubMethod>;
  /** HUB_MAX_CONNECTIONS_PER_USER / HUB_MAX_CONNECTIONS: sockets past a cap get a handshake error. */
  maxConnectionsPerUser?: number;
  maxConnections?: number;
  /** HUB_MAX_CONNECTS_PER_SECOND: new connections admitted per second (negotiate, or an upgrade without one). */
  maxConnectsPerSecond?: number;
  /**
   * Each user's share of the connects (REALTIME_DEFAULTS.hubUserConnectsPerSecond, a burst of
   * HUB_MAX_CONNECTIONS_PER_USER), taken before the replica's rate: one user's negotiate loop is
   * refused 429 without draining it. Undefined: no share.
   */
  userConnectShare?: BucketRate;
  /**
   * Each connection's budget of hub method calls (HUB_INVOCATIONS_PER_SECOND, a burst of twice that):
   * past it a call is refused unrun, and a connection that keeps going is closed (invocation-budget.ts). Undefined: none.
   */
  invocationBudget?: BucketRate;
  /** A ping (type 6) goes to a socket the server has not written to for this long. Default 15 s. */
  pingIntervalMs?: number;
  /** A socket whose handshake request has not arrived this long after its upgrade gets a handshake error and is closed (REALTIME_DEFAULTS.hubHandshakeTimeoutMs when unset; defaults.ts). */
  handshakeTimeoutMs?: number;
  /** A socket that sent nothing (not even a ping) for this long is closed (REALTIME_DEFAULTS.hubClientTimeoutMs when unset). */
  clientTimeoutMs?: number;
  /** Per-socket send buffer cap (REALTIME_DEFAULTS.hubMaxBufferedBytes); past it the socket is closed as a slow consumer. Default 1 MiB. */
  maxBufferedBytes?: number;
  backplane?: Backplane;
  presence?: PresenceStore;
  replicaId?: string;
  /** Business clock for connection-token expiry (socket liveness runs on a monotonic clock). */
  clock?: Clock;
  /** How long a negotiate's connection token opens a WebSocket (once). Default 15 s. */
  connectionTokenTtlMs?: number;
  /** How long close() waits for sockets to finish their close handshake before dropping them. Default 2 s. */
  closeGraceMs?: number;
}

export type AuthResult =
  | { ok: true; principal: Principal }
  | { ok: false; code: 'AUTH_REQUIRED' | AuthCode; message: string; statusCode: 401 | 503 }
  | { ok: false; code: string; message: string; statusCode: 403 };

/** A connect refused by a budget: 429 for the user's own share, 503 for the replica's rate. */
export interface ConnectRefusal {
  statusCode: 429 | 503;
  retryAfterSeconds: number;
}

export interface Hub {
  readonly replicaId: string;
  /**
   * Pushes `{type:1,target:eventName,arguments:[payload]}` to every socket of the group, on every
   * replica. `membershipVersion`: the group's membership version the send was made at; each
   * replica delivers only to members as of at least that version (membership.ts).
   */
  send(group: string, eventName: string, payload: unknown, opts?: { membershipVersion?: number }): Promise<void>;
  /** Closes every connection of the user, on every replica, with a close message giving `reason` (no reconnect). */
  disconnectUser(userId: string, reason: string): Promise<void>;
  /** Applies to the user's open connections at once, on every replica. */
  addUserToGroup(userId: string, group: string): Promise<void>;
  removeUserFromGroup(userId: string, group: string): Promise<void>;
  isOnline(userId: string): Promise<boolean>;
  /** Online on any replica, or when last seen (null while online or never recorded), per user in order. */
  presenceOf(userIds: readonly string[]): Promise<{ userId: string; online: boolean; lastSeenAt: Date | null }[]>;
  /**
   * Called when a user comes online (no replica held them) or goes offline (their last connection
   * anywhere closed). A replica that dies without closing its sockets announces nothing: its users
   * read as offline once its claims expire (about a minute), with no frame.
   */
  onPresenceChange(listener: (change: PresenceChange) => void): void;
  /** Backplane state for /health/ready: 'disabled' for the in-process backplane. */
  health(): Promise<BackplaneStatus>;
  /** Open connections on this replica. */
  connectionCount(): number;
  /** Sends a close message to every socket, closes them, then the backplane and presence store. */
  close(): Promise<void>;

  // ---- used by the transport (plugin.ts) ----
  readonly closing: boolean;
  /** Verifies the token, then asks the access checks: a user one of them revoked gets its 403. */
  authenticate(token: string | undefined): Promise<AuthResult>;
  negotiate(principal: Principal, version: 0 | 1): NegotiateReply;
  /**
   * Takes a place in the user's connect share, then in the replica's connect rate: undefined when
   * admitted, else 429 (the user's share, counted as refused, reason user_rate) or 503 (the replica's
   * rate, reason rate) with the seconds to wait.
   */
  admitConnect(userId: string): ConnectRefusal | undefined;
  /** The connection id for a WebSocket: from a negotiate token (`?id=`), or fresh when negotiation was skipped. */
  connectionIdFor(principal: Principal, connectionToken: string | undefined): string | undefined;
  /** Takes an upgraded socket: it becomes a connection once its handshake request is read (handshake.ts). */
  attach(socket: WebSocket, principal: Principal, connectionId: string): void;
  /** A socket past the connect rate: answered as a connection, then closed with a close message that allows reconnecting. */
  turnAway(socket: WebSocket, principal: Principal, retryAfterSeconds: number): void;
}
