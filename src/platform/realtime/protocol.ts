/**
 * The SignalR JSON hub protocol, as pure functions: record framing, handshake, message parsing and
 * encoding, and the negotiate reply. Nothing here does I/O, so it is tested without sockets.
 * Reference: https://github.com/dotnet/aspnetcore/blob/main/src/SignalR/docs/specs/HubProtocol.md
 */

/** Every JSON record (handshake included) ends with this byte (ASCII record separator). */
export const RECORD_SEPARATOR = '\u001e';

/** Message types of the hub protocol. */
export const MessageType = {
  Invocation: 1,
  StreamItem: 2,
  Completion: 3,
  StreamInvocation: 4,
  CancelInvocation: 5,
  Ping: 6,
  Close: 7,
  Ack: 8,
  Sequence: 9,
} as const;

/**
 * Splits received text into complete records. A WebSocket message may carry several records, and a
 * record may in principle be split across messages (the official clients never do, other clients
 * may), so the unterminated tail is returned as `rest` for the caller to prepend to the next message.
 * Empty records (two separators in a row) are dropped.
 */
export function splitRecords(pending: string, chunk: string): { records: string[]; rest: string } {
  const parts = (pending + chunk).split(RECORD_SEPARATOR);
  const rest = parts.pop() ?? '';
  return { records: parts.filter((p) => p.length > 0), rest };
}

export const frame = (message: object): string => JSON.stringify(message) + RECORD_SEPARATOR;

// ---------- handshake ----------

export type HandshakeResult = { ok: true } | { ok: false; error: string };

/** Checks the client's first record, e.g. `{"protocol":"json","version":1}`. */
export function parseHandshakeRequest(record: string): HandshakeResult {
  let value: unknown;
  try {
    value = JSON.parse(record);
  } catch {
    return { ok: false, error: 'Handshake request is not valid JSON.' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: 'Handshake request is not a JSON object.' };
  }
  const { protocol, version } = value as { protocol?: unknown; version?: unknown };
  if (typeof protocol !== 'string' || typeof version !== 'number') {
    return { ok: false, error: 'Handshake request needs a string "protocol" and a numeric "version".' };
  }
  if (protocol !== 'json') return { ok: false, error: `The protocol '${protocol}' is not supported.` };
  if (version !== 1) return { ok: false, error: `The server does not support version ${version} of the 'json' protocol.` };
  return { ok: true };
}

/** `{}` accepts the handshake; `{"error": …}` refuses it (the server then closes the socket). */
export const encodeHandshakeResponse = (error?: string): string => frame(error === undefined ? {} : { error });

// ---------- messages from the client ----------

export type ClientMessage =
  | { kind: 'ping' }
  | { kind: 'close' }
  /** An Invocation or StreamInvocation; `invocationId` is absent for fire-and-forget calls. */
  | { kind: 'invocation'; target: string; invocationId?: string }
  /** Types the hub has no use for (stream items, completions, cancels, acks, unknown types). */
  | { kind: 'ignored'; type: number }
  | { kind: 'invalid'; reason: string };

export function parseClientMessage(record: string): ClientMessage {
  let value: unknown;
  try {
    value = JSON.parse(record);
  } catch {
    return { kind: 'invalid', reason: 'message is not valid JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'invalid', reason: 'message is not a JSON object' };
  }
  const msg = value as { type?: unknown; target?: unknown; invocationId?: unknown };
  if (typeof msg.type !== 'number' || !Number.isInteger(msg.type)) {
    return { kind: 'invalid', reason: 'message has no integer "type"' };
  }
  switch (msg.type) {
    case MessageType.Ping:
      return { kind: 'ping' };
    case MessageType.Close:
      return { kind: 'close' };
    case MessageType.Invocation:
    case MessageType.StreamInvocation: {
      if (typeof msg.target !== 'string') return { kind: 'invalid', reason: 'invocation has no string "target"' };
      if (msg.invocationId !== undefined && typeof msg.invocationId !== 'string') {
        return { kind: 'invalid', reason: 'invocation has a non-string "invocationId"' };
      }
      // A stream invocation always expects an answer, so it always carries an id.
      return msg.invocationId === undefined
        ? { kind: 'invocation', target: msg.target }
        : { kind: 'invocation', target: msg.target, invocationId: msg.invocationId };
    }
    default:
      return { kind: 'ignored', type: msg.type };
  }
}

// ---------- messages to the client ----------

export const encodeInvocation = (target: string, payload: unknown): string =>
  frame({ type: MessageType.Invocation, target, arguments: [payload ?? null] });

export const encodePing = (): string => frame({ type: MessageType.Ping });

/** The client stops with `error` as the reason; with allowReconnect it runs its reconnect policy. */
export const encodeClose = (error: string | undefined, allowReconnect: boolean): string =>
  frame(error === undefined ? { type: MessageType.Close, allowReconnect } : { type: MessageType.Close, error, allowReconnect });

export const encodeCompletionError = (invocationId: string, error: string): string =>
  frame({ type: MessageType.Completion, invocationId, error });

// ---------- negotiate ----------

export interface NegotiateReply {
  negotiateVersion: number;
  connectionId: string;
  connectionToken?: string;
  availableTransports: { transport: 'WebSockets'; transferFormats: ['Text'] }[];
}

/**
 * The reply to `POST …/negotiate?negotiateVersion=n`. Version 1 (the current clients) gets a
 * separate connectionToken that goes in `?id=`; version 0 clients use the connectionId as the id,
 * so there the token is the id. Only WebSockets with text frames is offered: the hub speaks JSON only.
 */
export function negotiateReply(requestedVersion: number, connectionId: string, connectionToken: string): NegotiateReply {
  const availableTransports: NegotiateReply['availableTransports'] = [{ transport: 'WebSockets', transferFormats: ['Text'] }];
  if (requestedVersion >= 1) return { negotiateVersion: 1, connectionId, connectionToken, availableTransports };
  return { negotiateVersion: 0, connectionId: connectionToken, availableTransports };
}

/** `?negotiateVersion=` as a number; absent or unreadable counts as version 0, as in ASP.NET Core. */
export function requestedNegotiateVersion(raw: unknown): number {
  const n = typeof raw === 'string' ? Number.parseInt(raw, 10) : NaN;
  return Number.isFinite(n) && n > 0 ? n : 0;
}
