import type { RawData, WebSocket } from 'ws';
import type { Principal } from '../http/auth.ts';
import { rawToBuffer } from './handshake.ts';
import { FrameTally, type DisconnectReason, type FrameKind, type HubMetrics } from './metrics.ts';
import { encodeHandshakeResponse, type ClientMessage, type WireFormat } from './protocol.ts';
import { REALTIME_DEFAULTS } from './defaults.ts';

export interface ConnectionLimits {
  maxBufferedBytes: number;
  /**
   * Longest unterminated record kept between WebSocket messages (characters of a JSON record,
   * bytes of a MessagePack frame, whose length prefix is checked against it; handshake.ts applies
   * it to the handshake request).
   */
  maxPendingChars: number;
}

export interface ConnectionHooks {
  /** The socket is gone (whoever closed it); called exactly once. */
  onClosed(conn: HubConnection): void;
  /** The connection queued its first frame since its last flush: call flush() soon (the hub does, once per tick). */
  onQueued(conn: HubConnection): void;
  /** A client called a hub method (hub-methods.ts answers it). */
  onInvocation(conn: HubConnection, call: { target: string; invocationId?: string; arguments: unknown[]; stream?: true }): void;
}

/**
 * A connection exists from its valid handshake request on (the front door, handshake.ts, holds
 * the socket before): `joining` while the hub resolves its groups, `open` once the handshake
 * response is sent, `closed` from the moment the server or the peer starts closing (nothing is
 * sent after that).
 */
export type ConnectionState = 'joining' | 'open' | 'closed';

/** Liveness uses a monotonic clock: socket timeouts are about elapsed real time, not business time. */
export const monotonicMs = (): number => performance.now();

const CLOSE_CODE_NORMAL = 1000;
export const CloseErrors = {
  slowConsumer: 'slow consumer',
  clientTimeout: 'Server timeout elapsed without receiving a message from the client.',
  protocolError: 'Connection closed with an error: invalid message.',
  messageTooLarge: 'Connection closed with an error: the message is larger than the server accepts.',
  shutdown: 'Server is shutting down.',
  tokenExpired: 'Unauthorized: the access token expired.',
} as const;

/** One SignalR connection over one WebSocket. */
export class HubConnection {
  readonly id: string;
  readonly principal: Principal;
  readonly socket: WebSocket;
  readonly groups = new Set<string>();
  readonly openedAt = monotonicMs();
  state: ConnectionState = 'joining';
  lastReceivedAt = this.openedAt;
  lastSentAt = this.openedAt;
  closeReason: DisconnectReason | undefined;
  /** The hub protocol the handshake request picked. */
  readonly format: WireFormat;
  /** Reads the picked protocol's messages. */
  private readonly read: (chunk: Buffer) => ClientMessage[];
  /** What arrived after the handshake record while the groups were joined: read once the connection opens. */
  private early: Buffer[] | undefined;
  private earlyBytes = 0;
  /** Frames accepted by send() and not yet written: one WebSocket message per flush. */
  private queued: (Buffer | string)[] = [];
  private readonly queuedKinds = new FrameTally();
  private queuedBytes = 0;
  private readonly limits: ConnectionLimits;
  private readonly hooks: ConnectionHooks;
  private readonly metrics: HubMetrics;

  /**
   * Made when the socket's handshake request was read (handshake.ts); `afterHandshake` is what came
   * behind it, in the protocol it picked, held like anything else before the answer.
   */
  constructor(
    id: string,
    principal: Principal,
    socket: WebSocket,
    handshake: { format: WireFormat; afterHandshake: Buffer },
    limits: ConnectionLimits,
    hooks: ConnectionHooks,
    metrics: HubMetrics,
  ) {
    this.id = id;
    this.principal = principal;
    this.socket = socket;
    this.format = handshake.format;
    this.read = handshake.format.reader(limits.maxPendingChars);
    this.limits = limits;
    this.hooks = hooks;
    this.metrics = metrics;
    if (handshake.afterHandshake.length > 0) this.holdEarly(handshake.afterHandshake);
    socket.on('message', (data) => this.receive(data));
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
    const early = this.early;
    this.early = undefined;
    for (const chunk of early ?? []) {
      this.readMessages(chunk);
      if (this.isClosed()) return;
    }
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
    if (this.queuedBytes > 0 && this.queuedBytes + size > REALTIME_DEFAULTS.hubFlushAtBytes) this.flush();
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
      this.socket.send(frames.length === 1 ? frames[0]! : Buffer.concat(frames.map(asBuffer), bytes), { binary: this.format.binary });
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
      this.write(this.format.close(error, allowReconnect), 'close');
    }
    this.end(reason, mode);
  }

  /** Called by the hub's timer: closes a silent peer, or pings one the server has not written to lately. */
  checkLiveness(now: number, pingIntervalMs: number, clientTimeoutMs: number): void {
    if (this.state === 'closed') return;
    if (now - this.lastReceivedAt >= clientTimeoutMs) {
      this.close('client_timeout', CloseErrors.clientTimeout, true, 'terminate');
    } else if (this.state === 'open' && now - this.lastSentAt >= pingIntervalMs) {
      this.send(this.format.ping(), 'ping');
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
    // JSON runs over text frames (the JS client rejects binary ones), MessagePack over binary ones,
    // its handshake answer included, as ASP.NET Core sends it (clients may parse it with their binary reader).
    this.socket.send(data, { binary: this.format.binary });
    this.lastSentAt = monotonicMs();
    this.metrics.framesSent.inc({ kind });
  }

  private receive(data: RawData): void {
    this.lastReceivedAt = monotonicMs();
    if (this.state === 'closed') return;
    const chunk = rawToBuffer(data);
    if (this.state === 'joining') return this.holdEarly(chunk);
    this.readMessages(chunk);
  }

  private readMessages(chunk: Buffer): void {
    for (const message of this.read(chunk)) {
      this.handleMessage(message);
      if (this.isClosed()) return;
    }
  }

  /**
   * Messages sent right behind the handshake (in its WebSocket message or before the answer) are
   * answered once the connection is open, as ASP.NET Core does: a completion needs an open connection.
   */
  private holdEarly(chunk: Buffer): void {
    this.earlyBytes += chunk.length;
    if (this.earlyBytes > this.limits.maxPendingChars) return this.end('protocol_error', 'graceful');
    (this.early ??= []).push(chunk);
  }

  private handleMessage(message: ClientMessage): void {
    switch (message.kind) {
      case 'close':
        return this.end('client_closed', 'graceful');
      case 'invalid':
        return this.close('protocol_error', CloseErrors.protocolError, false, 'graceful');
      case 'too_large':
        return this.close('protocol_error', CloseErrors.messageTooLarge, false, 'graceful');
      case 'invocation':
        return this.hooks.onInvocation(this, message);
      default:
        return; // pings only refresh lastReceivedAt; other types carry nothing for this hub
    }
  }
}

const asBuffer = (frame: Buffer | string): Buffer => (typeof frame === 'string' ? Buffer.from(frame) : frame);
