/**
 * The SignalR hub protocol's JSON side, as pure functions: record framing, the handshake (JSON for
 * every protocol), message parsing and encoding, and the negotiate reply. The MessagePack side is
 * msgpack-protocol.ts. Nothing here does I/O, so it is tested without sockets.
 * Reference: https://github.com/dotnet/aspnetcore/blob/main/src/SignalR/docs/specs/HubProtocol.md
 */

/** Every JSON record (handshake included) ends with this byte (ASCII record separator). */
export const RECORD_SEPARATOR = '\u001e';
export const RECORD_SEPARATOR_BYTE = 0x1e;

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
 * One hub protocol as a connection uses it: how its frames are written (each protocol's frames are
 * self-delimiting, so several concatenated make one WebSocket message) and how its messages are read.
 */
export interface WireFormat {
  readonly name: HubProtocolName;
  /** Binary WebSocket frames (MessagePack) or text frames (JSON: the JS client rejects binary ones). */
  readonly binary: boolean;
  invocation(target: string, payload: unknown): Buffer | string;
  ping(): Buffer | string;
  close(error: string | undefined, allowReconnect: boolean): Buffer | string;
  completionError(invocationId: string, error: string): Buffer | string;
  /** The answer to a hub method call that returned nothing. */
  completion(invocationId: string): Buffer | string;
  /** A reader for one connection: its messages from each received chunk, keeping an unfinished tail. */
  reader(maxPending: number): (chunk: Buffer) => ClientMessage[];
}

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

export type HubProtocolName = 'json' | 'messagepack';

/**
 * The highest hub protocol version served, for both protocols. ASP.NET Core accepts every version
 * up to its own (`IsVersionSupported: version <= Version`); version 2 adds stateful reconnect,
 * which this hub does not offer, so 0 and 1 are served (clients without stateful reconnect send 1;
 * some older or independent ones send 0).
 */
export const MAX_HUB_PROTOCOL_VERSION = 1;
const MAX_ECHOED_NAME = 100;

export type HandshakeResult = { ok: true; protocol: HubProtocolName } | { ok: false; error: string };

/** The reference server's answer to a handshake it cannot read (with the reason its detailed errors add). */
const malformed = (reason: string): HandshakeResult => ({
  ok: false,
  error: `An unexpected error occurred during connection handshake. InvalidDataException: ${reason}`,
});

/**
 * Checks the client's first record, e.g. `{"protocol":"json","version":1}`. The texts of the
 * refusals are ASP.NET Core's, so clients written against it report the same reasons.
 */
export function parseHandshakeRequest(record: string): HandshakeResult {
  if (record.trim() === '') return malformed('The handshake request is empty.');
  let value: unknown;
  try {
    value = JSON.parse(record);
  } catch {
    return malformed('The handshake request is not valid JSON.');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return malformed('The handshake request is not a JSON object.');
  }
  const { protocol, version } = value as { protocol?: unknown; version?: unknown };
  if (protocol === undefined || protocol === null) return malformed("Missing required property 'protocol'.");
  if (typeof protocol !== 'string') return malformed("Expected 'protocol' to be of type String.");
  if (version === undefined || version === null) return malformed("Missing required property 'version'.");
  if (typeof version !== 'number' || !Number.isInteger(version)) return malformed("Expected 'version' to be an integer.");
  if (protocol !== 'json' && protocol !== 'messagepack') {
    return { ok: false, error: `The protocol '${protocol.slice(0, MAX_ECHOED_NAME)}' is not supported.` };
  }
  if (version < 0 || version > MAX_HUB_PROTOCOL_VERSION) {
    return { ok: false, error: `The server does not support version ${version} of the '${protocol}' protocol.` };
  }
  return { ok: true, protocol };
}

/**
 * Finds the handshake record: JSON ending with the record separator whatever the protocol (over a
 * text or a binary frame). `tail` is what came before without a separator; the bytes after the
 * record (`rest`) belong to the protocol it picks. A lone separator is an empty record, which
 * parseHandshakeRequest refuses, as ASP.NET Core does (skipping it left the socket unanswered).
 */
export function splitHandshake(
  tail: Buffer | undefined,
  chunk: Buffer,
  maxBytes: number,
): { kind: 'record'; record: string; rest: Buffer } | { kind: 'incomplete'; tail: Buffer | undefined } | { kind: 'too_long' } {
  const buf = tail ? Buffer.concat([tail, chunk]) : chunk;
  const end = buf.indexOf(RECORD_SEPARATOR_BYTE);
  if (end >= 0) return { kind: 'record', record: buf.subarray(0, end).toString('utf8'), rest: buf.subarray(end + 1) };
  if (buf.length > maxBytes) return { kind: 'too_long' };
  return { kind: 'incomplete', tail: buf.length > 0 ? Buffer.from(buf) : undefined };
}

/** `{}` accepts the handshake; `{"error": …}` refuses it (the server then closes the socket). */
export const encodeHandshakeResponse = (error?: string): string => frame(error === undefined ? {} : { error });

// ---------- messages from the client ----------

export type ClientMessage =
  | { kind: 'ping' }
  | { kind: 'close' }
  /** An Invocation or StreamInvocation (`stream`); `invocationId` is absent for fire-and-forget calls. */
  | { kind: 'invocation'; target: string; invocationId?: string; arguments: unknown[]; stream?: true }
  /** Types the hub has no use for (stream items, completions, cancels, acks, unknown types). */
  | { kind: 'ignored'; type: number }
  | { kind: 'invalid'; reason: string }
  /** A record or frame longer than the connection accepts (refused before it is all buffered). */
  | { kind: 'too_large' };

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
  const msg = value as { type?: unknown; target?: unknown; invocationId?: unknown; arguments?: unknown };
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
      const args = Array.isArray(msg.arguments) ? (msg.arguments as unknown[]) : [];
      const stream = msg.type === MessageType.StreamInvocation ? { stream: true as const } : {};
      // A stream invocation always expects an answer, so it always carries an id.
      return msg.invocationId === undefined
        ? { kind: 'invocation', target: msg.target, arguments: args, ...stream }
        : { kind: 'invocation', target: msg.target, invocationId: msg.invocationId, arguments: args, ...stream };
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

export const encodeCompletion = (invocationId: string): string => frame({ type: MessageType.Completion, invocationId });

/**
 * Reads a connection's JSON records. An unterminated tail past `maxPendingChars` is refused at once
 * (nothing of that chunk is handled): clients only send handshakes, pings and small invocations.
 */
export function createJsonReader(maxPendingChars: number): (chunk: Buffer) => ClientMessage[] {
  let pending = '';
  return (chunk) => {
    const { records, rest } = splitRecords(pending, chunk.toString('utf8'));
    pending = rest;
    if (rest.length > maxPendingChars) return [{ kind: 'too_large' }];
    return records.map(parseClientMessage);
  };
}

export const jsonFormat: WireFormat = {
  name: 'json',
  binary: false,
  invocation: encodeInvocation,
  ping: encodePing,
  close: encodeClose,
  completionError: encodeCompletionError,
  completion: encodeCompletion,
  reader: createJsonReader,
};

// ---------- negotiate ----------

export interface NegotiateReply {
  negotiateVersion: number;
  connectionId: string;
  connectionToken?: string;
  availableTransports: { transport: 'WebSockets'; transferFormats: ('Text' | 'Binary')[] }[];
}

/**
 * The reply to `POST …/negotiate?negotiateVersion=n`, as ASP.NET Core writes it. Version 1 (the
 * current clients) gets a separate connectionToken that goes in `?id=`; version 0 clients use the
 * connectionId as the id, so there the token is the id. WebSockets is the only transport, with text
 * frames (JSON) and binary frames (MessagePack).
 */
export function negotiateReply(version: 0 | 1, connectionId: string, connectionToken: string): NegotiateReply {
  const availableTransports: NegotiateReply['availableTransports'] = [{ transport: 'WebSockets', transferFormats: ['Text', 'Binary'] }];
  if (version === 1) return { negotiateVersion: 1, connectionId, connectionToken, availableTransports };
  return { negotiateVersion: 0, connectionId: connectionToken, availableTransports };
}

const INT32 = /^\s*[+-]?\d+\s*$/;

/**
 * `?negotiateVersion=` read as ASP.NET Core reads it (int.TryParse): absent means 0, above 1 means 1
 * (the newest this hub speaks). A value that is not an integer, or is negative, is refused with the
 * reference server's text (it answers those with `{"error"}`; this hub with a 400, see plugin.ts).
 */
export function requestedNegotiateVersion(raw: string | undefined): { ok: true; version: 0 | 1 } | { ok: false; error: string } {
  if (raw === undefined) return { ok: true, version: 0 };
  const n = INT32.test(raw) ? Number(raw.trim()) : NaN;
  if (!Number.isInteger(n) || n > 2 ** 31 - 1 || n < -(2 ** 31)) {
    return { ok: false, error: 'The client requested a non-integer protocol version.' };
  }
  if (n < 0) return { ok: false, error: `The client requested version '${n}', but the server does not support this version.` };
  return { ok: true, version: n >= 1 ? 1 : 0 };
}
