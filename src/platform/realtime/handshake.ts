import type { RawData, WebSocket } from 'ws';
import type { Gauge } from '../observability/metrics.ts';
import { messagePackFormat } from './msgpack-protocol.ts';
import { encodeHandshakeResponse, jsonFormat, parseHandshakeRequest, splitHandshake, type HubProtocolName, type WireFormat } from './protocol.ts';

/**
 * The hub's front door: every upgraded socket waits here for its handshake request before it is a
 * connection. A socket that sends a malformed request (a lone record separator included) or none
 * within the handshake timeout is answered with a handshake error, as ASP.NET Core does, and
 * closed; nothing it did counts against its user's connection cap, which the hub applies only to
 * a valid request. The sockets waiting are bounded per user and counted per replica, so they
 * cannot fill a replica either.
 */

export const FORMATS: Record<HubProtocolName, WireFormat> = { json: jsonFormat, messagepack: messagePackFormat };

/** ASP.NET Core's answer to a socket whose handshake request did not arrive within its timeout. */
export const HANDSHAKE_CANCELED = 'Handshake was canceled.';
const TOO_LONG = 'An unexpected error occurred during connection handshake. InvalidDataException: The handshake request is too long.';

const CLOSE_CODE_NORMAL = 1000;

export type HandshakeOutcome =
  /** A valid request: the caller answers it. `rest` is what followed it, in the protocol it picked. */
  | { kind: 'request'; protocol: HubProtocolName; rest: Buffer }
  /** Malformed, or past the size limit: answered with a handshake error, socket closing. */
  | { kind: 'invalid' }
  /** No request within the timeout: answered with the timeout's error, socket closing. */
  | { kind: 'timeout' }
  /** The peer closed it first, or the door was shut (answered with the shutdown's error). */
  | { kind: 'gone' };

export interface Wait {
  /** Longest wait for the request from the upgrade on. */
  timeoutMs: number;
  /** The handshake error a socket gets when the wait runs out (a refused socket gets its refusal). */
  timeoutError: string;
}

/** A handshake error answer `{"error":…}`, then the WebSocket close handshake. */
export function answerHandshakeError(socket: WebSocket, error: string, binary = false): void {
  socket.send(encodeHandshakeResponse(error), { binary });
  socket.close(CLOSE_CODE_NORMAL);
}

export class FrontDoor {
  /** Each waiting socket and how to shut it (shutdown). */
  private readonly waiting = new Map<WebSocket, (error: string) => void>();
  private readonly byUser = new Map<string, number>();
  private readonly maxBytes: number;
  private readonly gauge: Gauge;

  constructor(opts: { maxBytes: number; gauge: Gauge }) {
    this.maxBytes = opts.maxBytes;
    this.gauge = opts.gauge;
  }

  /** Sockets waiting for their handshake request on this replica. */
  get size(): number {
    return this.waiting.size;
  }

  /** Sockets of the user waiting for their handshake request. */
  waitingOf(userId: string): number {
    return this.byUser.get(userId) ?? 0;
  }

  /** Reads the socket's handshake request (across WebSocket messages) and calls `done` exactly once. */
  wait(socket: WebSocket, userId: string, wait: Wait, done: (outcome: HandshakeOutcome) => void): void {
    let tail: Buffer | undefined;
    let settled = false;
    const finish = (outcome: HandshakeOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.off('message', onMessage);
      socket.off('close', onClose);
      this.waiting.delete(socket);
      const left = (this.byUser.get(userId) ?? 1) - 1;
      if (left > 0) this.byUser.set(userId, left);
      else this.byUser.delete(userId);
      this.gauge.dec();
      done(outcome);
    };
    const refuse = (error: string, kind: 'invalid' | 'timeout' | 'gone') => {
      answerHandshakeError(socket, error);
      finish({ kind });
    };
    const onMessage = (data: RawData) => {
      const split = splitHandshake(tail, rawToBuffer(data), this.maxBytes);
      if (split.kind === 'incomplete') {
        tail = split.tail;
        return;
      }
      if (split.kind === 'too_long') return refuse(TOO_LONG, 'invalid');
      const request = parseHandshakeRequest(split.record);
      if (!request.ok) return refuse(request.error, 'invalid');
      finish({ kind: 'request', protocol: request.protocol, rest: split.rest });
    };
    const onClose = () => finish({ kind: 'gone' });
    // Counted from the upgrade (not from the last byte, as the client timeout is): a peer trickling
    // an endless request cannot hold the socket longer than this.
    const timer = setTimeout(() => refuse(wait.timeoutError, 'timeout'), wait.timeoutMs);
    this.waiting.set(socket, (error) => refuse(error, 'gone'));
    this.byUser.set(userId, this.waitingOf(userId) + 1);
    this.gauge.inc();
    socket.on('message', onMessage);
    socket.once('close', onClose);
  }

  /**
   * A socket refused at the upgrade: its handshake request is answered with `error` (the official
   * client fails oddly on an answer that comes first); one that sends none gets it after `waitMs`.
   */
  refuse(socket: WebSocket, userId: string, error: string, waitMs: number): void {
    this.wait(socket, userId, { timeoutMs: waitMs, timeoutError: error }, (outcome) => {
      if (outcome.kind === 'request') answerHandshakeError(socket, error, FORMATS[outcome.protocol].binary);
    });
  }

  /**
   * A socket past the connect rate: its handshake is answered as accepted, in the protocol it picked,
   * and followed at once by a close message that allows reconnecting — so a client with automatic
   * reconnect backs off and comes back, instead of failing its start() as for a cap.
   */
  turnAway(socket: WebSocket, userId: string, error: string, waitMs: number): void {
    this.wait(socket, userId, { timeoutMs: waitMs, timeoutError: error }, (outcome) => {
      if (outcome.kind !== 'request') return;
      const format = FORMATS[outcome.protocol];
      socket.send(encodeHandshakeResponse(), { binary: format.binary });
      socket.send(format.close(error, true), { binary: format.binary });
      socket.close(CLOSE_CODE_NORMAL);
    });
  }

  /** Answers every waiting socket with `error` and closes it (shutdown). */
  shut(error: string): void {
    for (const shutOne of [...this.waiting.values()]) shutOne(error);
  }
}

export function rawToBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
