import { counter, gauge, histogram, type Registry } from '../observability/metrics.ts';

/** Why a connection ended; the label of hub_disconnects_total (the seed's "hub disconnect rate"). */
export type DisconnectReason =
  | 'client_closed'
  | 'client_timeout'
  | 'slow_consumer'
  | 'protocol_error'
  | 'handshake_failed'
  | 'handshake_timeout'
  | 'server_shutdown'
  | 'token_expired'
  | 'access_revoked'
  | 'invocation_rate';

/** Why a WebSocket was refused before it became a connection (hub_connections_refused_total). */
export type RefusalReason = 'user_limit' | 'replica_limit' | 'handshake_limit' | 'forbidden' | 'rate' | 'user_rate';

export type FrameKind = 'invocation' | 'ping' | 'close' | 'completion' | 'handshake';

export function createHubMetrics(registry: Registry) {
  return {
    connectionsActive: gauge(registry, {
      name: 'hub_connections_active',
      help: 'Open hub connections on this replica (from a valid handshake request until the socket closes)',
    }),
    handshakesPending: gauge(registry, {
      name: 'hub_handshakes_pending',
      help: 'Upgraded hub WebSockets waiting for their handshake request (refused and turned-away ones included)',
    }),
    connectionDuration: histogram(registry, {
      name: 'hub_connection_duration_seconds',
      help: 'How long hub connections stayed open',
      buckets: [1, 10, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600],
    }),
    framesSent: counter<'kind'>(registry, {
      name: 'hub_frames_sent_total',
      help: 'Frames (SignalR records) written to hub sockets, by kind',
      labelNames: ['kind'],
    }),
    slowConsumerCloses: counter(registry, {
      name: 'hub_slow_consumer_closes_total',
      help: 'Sockets closed because their send buffer passed its cap (REALTIME_DEFAULTS.hubMaxBufferedBytes)',
    }),
    authFailures: counter(registry, {
      name: 'hub_auth_failures_total',
      help: 'Negotiate or connect attempts refused for a missing or invalid token',
    }),
    refused: counter<'reason'>(registry, {
      name: 'hub_connections_refused_total',
      help: "WebSockets refused: a connection cap (user_limit, replica_limit), too many handshakes of one user in progress (handshake_limit), no access (forbidden), the connect rate (rate), the user's share of it (user_rate)",
      labelNames: ['reason'],
    }),
    groupResyncs: counter<'result'>(registry, {
      name: 'hub_group_resyncs_total',
      help: "Reads of a group's members from its owner, made when a send carried a membership version newer than this replica's",
      labelNames: ['result'],
    }),
    unverifiedSendsDropped: counter(registry, {
      name: 'hub_unverified_sends_dropped_total',
      help: 'Group sends dropped because the membership they were sent at could not be confirmed (record-level access fails closed)',
    }),
    invocationsRefused: counter<'reason'>(registry, {
      name: 'hub_invocations_refused_total',
      help: "Hub method calls refused without running: past the connection's invocation budget (rate), past its user's, shared by the user's connections (user_rate), a stream invocation of a method that does not stream (stream)",
      labelNames: ['reason'],
    }),
    disconnects: counter<'reason'>(registry, {
      name: 'hub_disconnects_total',
      help: 'Hub connections that ended, by reason (invocation_rate: closed for calling hub methods past its budget); handshake_failed and handshake_timeout also count sockets closed before a valid handshake request',
      labelNames: ['reason'],
    }),
  };
}

export type HubMetrics = ReturnType<typeof createHubMetrics>;

/** Frames by kind, counted where they are written and added to hub_frames_sent_total once per flush round. */
export class FrameTally {
  private readonly counts = new Map<FrameKind, number>();

  add(kind: FrameKind, n: number): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + n);
  }

  addAll(other: FrameTally): void {
    for (const [kind, n] of other.counts) this.add(kind, n);
  }

  clear(): void {
    this.counts.clear();
  }

  countInto(metrics: HubMetrics): void {
    for (const [kind, n] of this.counts) if (n > 0) metrics.framesSent.inc({ kind }, n);
  }
}
