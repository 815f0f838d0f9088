import type { RawData, WebSocket } from 'ws';
import type { Principal } from '../http/auth.ts';
import type { DisconnectReason, FrameKind, HubMetrics } from './metrics.ts';
import {
  encodeClose,
  encodeCompletionError,
  encodeHandshakeResponse,
  encodePing,
  parseClientMessage,
  parseHandshakeRequest,
  splitRecords,
} from './protocol.ts';

export interface ConnectionLimits {
  maxBufferedBytes: number;
  /** Longest unterminated record kept between WebSocket messages (characters). */
  maxPendingChars: number;
}

export interface ConnectionHooks {
  /** A valid handshake request arrived; the hub joins groups, then calls accept() or refuse(). */
  onHandshake(conn: HubConnection): void;
  /** The socket is gone (whoever closed it); called exactly once. */
  onClosed(conn: HubConnection): void;
  /** The connection queued its first frame since its last flush: call flush() soon (the hub does, once per tick). */
  onQueued(conn: HubConnection): void;
}

/**
 * `handshaking` until the client's handshake record, `joining` while the hub resolves its groups,
 * `open` once the handshake response is sent, `closed` from the moment the server or the peer
 * starts closing (nothing is sent after that).
 */
export type ConnectionState = 'handshaking' | 'joining' | 'open' | 'closed';

/** Liveness uses a monotonic clock: socket timeouts are about elapsed real time, not business time. */
export const monotonicMs = (): number => performance.now();

const CLOSE_CODE_NORMAL = 1000;
/** Queued bytes past which send() writes the queue out before taking more. */
export const FLUSH_AT_BYTES = 64 * 1024;
const MAX_ECHOED_TARGET = 100;

export const CloseErrors = {
  slowConsumer: 'slow consumer',
  clientTimeout: 'Server timeout elapsed without receiving a message from the client.',
  protocolError: 'Connection closed with an error: invalid message.',
  shutdown: 'Server is shutting down.',
  tokenExpired: 'Unauthorized: the access token expired.',
} as const;

/**
 * Refuses a WebSocket before it becomes a connection (a cap is reached): the answer to the
 * client's handshake carries the reason, so its start() rejects with it, then the socket closes.
 * The answer waits for the handshake (the official client fails oddly on an answer that comes
 * first); a socket that sends none within `waitMs` is dropped.
 */
export function refuseSocket(socket: WebSocket, error: string, waitMs: number): void {
  const timer = setTimeout(() => socket.terminate(), waitMs);
  socket.once('close', () => clearTimeout(timer));
  socket.once('message', () => {
    clearTimeout(timer);
    socket.send(encodeHandshakeResponse(error), { binary: false });
    socket.close(CLOSE_CODE_NORMAL);
  });
}

/** One SignalR connection over one WebSocket. */
export class HubConnection {
  readonly id: string;
  readonly principal: Principal;
  readonly socket: WebSocket;
  readonly groups = new Set<string>();
  readonly openedAt = monotonicMs();
  state: ConnectionState = 'handshaking';
  lastReceivedAt = this.openedAt;
  lastSentAt = this.openedAt;
  closeReason: DisconnectReason | undefined;
  private pending = '';
  /** Frames accepted by send() and not yet written: one WebSocket message per flush. */
  private queued: (Buffer | string)[] = [];
  private readonly queuedKinds = new FrameTally();
  private queuedBytes = 0;
  private readonly limits: ConnectionLimits;
  private readonly hooks: ConnectionHooks;
  private readonly metrics: HubMetrics;

  constructor(id: string, principal: Principal, socket: WebSocket, limits: ConnectionLimits, hooks: ConnectionHooks, metrics: HubMetrics) {
    this.id = id;
    this.principal = principal;
    this.socket = socket;
    this.limits = limits;
    this.hooks = hooks;
    this.metrics = metrics;
    socket.on('message', (data, isBinary) => this.receive(data, isBinary));
    socket.once('close', () => {
      this.state = 'closed';
      this.closeReason ??= 'client_closed';
      this.hooks.onClosed(this);
    });
  }

  get userId(): string {
    return this.principal.userId;
  }

  /** Handshake response `{}`: from here on the client's start() has resolved and frames flow. */
  accept(): void {
    if (this.state !== 'joining') return;
    this.state = 'open';
    this.write(encodeHandshakeResponse(), 'handshake');
  }

  refuse(error: string): void {
    if (this.state === 'closed') return;
    this.write(encodeHandshakeResponse(error), 'handshake');
    this.end('handshake_failed', 'graceful');
  }

  /**
   * Queues one frame for the next flush unless that would push the socket's send buffer (plus what
   * is queued) past the cap, in which case the socket is closed as a slow consumer (its buffered
   * and queued frames are dropped with it). Returns whether the frame was accepted.
   */
  send(data: Buffer | string, kind: FrameKind): boolean {
    if (this.state !== 'open') return false;
    const size = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
    // A big burst goes out in slices, so the kernel's send buffer takes its share before the cap
    // is judged (as it did when every frame was written at once).
    if (this.queuedBytes > 0 && this.queuedBytes + size > FLUSH_AT_BYTES) this.flush();
    if (this.socket.bufferedAmount + this.queuedBytes + size > this.limits.maxBufferedBytes) {
      this.metrics.slowConsumerCloses.inc();
      this.close('slow_consumer', CloseErrors.slowConsumer, true, 'terminate');
      return false;
    }
    if (this.queued.length === 0) this.hooks.onQueued(this);
    this.queued.push(data);
    this.queuedKinds.add(kind, 1);
    this.queuedBytes += size;
    return true;
  }

  /**
   * Writes every queued frame as ONE WebSocket message. SignalR records end with the record
   * separator and clients read every record of a message (as ASP.NET Core's own transport batches
   * them), so a burst of group sends costs one socket write per connection, not one per frame.
   */
  flush(sent?: FrameTally): void {
    const frames = this.queued;
    if (frames.length === 0) return;
    const bytes = this.queuedBytes;
    this.queuedBytes = 0;
    if (this.state === 'open') {
      this.socket.send(frames.length === 1 ? frames[0]! : Buffer.concat(frames.map(asBuffer), bytes), { binary: false });
      this.lastSentAt = monotonicMs();
      if (sent) sent.addAll(this.queuedKinds);
      else this.queuedKinds.countInto(this.metrics);
    }
    frames.length = 0; // both are reused: a connection flushes many times a second under load
    this.queuedKinds.clear();
  }

  /**
   * Closes with a close message (type 7) when the handshake is done, after what is queued (a slow
   * consumer's queue is dropped). 'terminate' drops the TCP connection at once (dead or stuck
   * peers: a close handshake would never complete); 'graceful' runs the WebSocket close handshake.
   */
  close(reason: DisconnectReason, error: string | undefined, allowReconnect: boolean, mode: 'graceful' | 'terminate'): void {
    if (this.state === 'closed') return;
    if (this.state === 'open' && reason !== 'slow_consumer') this.flush();
    // Best effort: a stuck peer's buffer is full and the message is dropped with the socket.
    if (this.state === 'open' && this.socket.bufferedAmount < this.limits.maxBufferedBytes) {
      this.write(encodeClose(error, allowReconnect), 'close');
    }
    this.end(reason, mode);
  }

  /** Called by the hub's timer: closes a silent peer, or pings one the server has not written to lately. */
  checkLiveness(now: number, pingIntervalMs: number, clientTimeoutMs: number): void {
    if (this.state === 'closed') return;
    if (now - this.lastReceivedAt >= clientTimeoutMs) {
      this.close('client_timeout', CloseErrors.clientTimeout, true, 'terminate');
    } else if (this.state === 'open' && now - this.lastSentAt >= pingIntervalMs) {
      this.send(encodePing(), 'ping');
    }
  }

  /**
   * A connection lives no longer than the token it was opened with: past its `exp` it is closed
   * with a close message that allows a reconnect, which a client makes with a fresh token.
   */
  closeIfTokenExpired(wallNowMs: number): void {
    const expiresAt = this.principal.expiresAt;
    if (expiresAt === undefined || this.state === 'closed' || wallNowMs < expiresAt) return;
    this.close('token_expired', CloseErrors.tokenExpired, true, 'graceful');
  }

  // A method, so TypeScript does not keep a narrowed `state` across calls that change it.
  private isClosed(): boolean {
    return this.state === 'closed';
  }

  private end(reason: DisconnectReason, mode: 'graceful' | 'terminate'): void {
    this.closeReason ??= reason;
    this.state = 'closed';
    this.queued.length = 0;
    this.queuedKinds.clear();
    this.queuedBytes = 0;
    if (mode === 'terminate') this.socket.terminate();
    else this.socket.close(CLOSE_CODE_NORMAL);
  }

  private write(data: Buffer | string, kind: FrameKind): void {
    // SignalR's JSON protocol runs over text frames; the JS client rejects binary ones.
    this.socket.send(data, { binary: false });
    this.lastSentAt = monotonicMs();
    this.metrics.framesSent.inc({ kind });
  }

  private receive(data: RawData, _isBinary: boolean): void {
    this.lastReceivedAt = monotonicMs();
    if (this.state === 'closed') return;
    const { records, rest } = splitRecords(this.pending, rawToString(data));
    this.pending = rest;
    if (rest.length > this.limits.maxPendingChars) {
      this.close('protocol_error', CloseErrors.protocolError, false, 'graceful');
      return;
    }
    for (const record of records) {
      this.handleRecord(record);
      if (this.isClosed()) return;
    }
  }

  private handleRecord(record: string): void {
    if (this.state === 'handshaking') {
      const handshake = parseHandshakeRequest(record);
      if (!handshake.ok) return this.refuse(handshake.error);
      this.state = 'joining';
      this.hooks.onHandshake(this);
      return;
    }
    const message = parseClientMessage(record);
    switch (message.kind) {
      case 'close':
        return this.end('client_closed', 'graceful');
      case 'invalid':
        return this.close('protocol_error', CloseErrors.protocolError, false, 'graceful');
      case 'invocation':
        // The hub exposes no client-callable methods. A call that waits for an answer gets a
        // completion error (as ASP.NET Core answers an unknown method); fire-and-forget calls are dropped.
        if (message.invocationId !== undefined) {
          const target = message.target.slice(0, MAX_ECHOED_TARGET);
          this.send(encodeCompletionError(message.invocationId, `Unknown hub method '${target}'`), 'completion');
        }
        return;
      default:
        return; // pings only refresh lastReceivedAt; other types carry nothing for this hub
    }
  }
}

const asBuffer = (frame: Buffer | string): Buffer => (typeof frame === 'string' ? Buffer.from(frame) : frame);

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

function rawToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
