/**
 * The SignalR MessagePack hub protocol (`{"protocol":"messagepack","version":1}`), as pure functions:
 * each message is a MessagePack array in a binary frame behind a varint length prefix (7 bits a
 * byte, low bits first, at most 5 bytes). Nothing here does I/O.
 * Reference: HubProtocol.md ("MessagePack (MsgPack) encoding") in dotnet/aspnetcore.
 */
import { Decoder, Encoder } from '@msgpack/msgpack';
import { MessageType, type ClientMessage, type WireFormat } from './protocol.ts';

/** A length prefix never takes more than 5 bytes (the protocol caps a message below 2 GiB). */
const MAX_PREFIX_BYTES = 5;

/** Prefixes `body` with its length, as the protocol's BinaryMessageFormat writes it. */
export function binaryFrame(body: Uint8Array): Buffer {
  let size = body.length;
  const prefix: number[] = [];
  do {
    let part = size & 0x7f;
    size >>>= 7;
    if (size > 0) part |= 0x80;
    prefix.push(part);
  } while (size > 0);
  const frame = Buffer.allocUnsafe(prefix.length + body.length);
  frame.set(prefix, 0);
  frame.set(body, prefix.length);
  return frame;
}

/**
 * The length prefix at `offset`: the body's size and the prefix's own length, 'incomplete' when the
 * buffer ends inside it, 'invalid' when it runs past 5 bytes or past 2 GiB (no client writes one).
 */
export function readLengthPrefix(buf: Uint8Array, offset: number): { size: number; prefixBytes: number } | 'incomplete' | 'invalid' {
  let size = 0;
  for (let i = 0; i < MAX_PREFIX_BYTES; i++) {
    if (offset + i >= buf.length) return 'incomplete';
    const byte = buf[offset + i]!;
    if (i === MAX_PREFIX_BYTES - 1 && byte > 0x07) return 'invalid';
    size += (byte & 0x7f) * 2 ** (7 * i);
    if ((byte & 0x80) === 0) return { size, prefixBytes: i + 1 };
  }
  return 'invalid';
}

// ---------- messages to the client ----------

/**
 * The payload as the JSON protocol delivers it (dates as ISO strings, undefined properties left
 * out, toJSON honoured), so a client sees the same values whichever protocol it picked. Costs one
 * JSON round trip per group send for MessagePack only (the hub encodes a group's frame once).
 */
const asJsonValue = (payload: unknown): unknown => JSON.parse(JSON.stringify(payload ?? null)) as unknown;

const NO_HEADERS = {};

/** One encoder for every frame: its buffer is reused, and binaryFrame copies the bytes out at once. */
const encoder = new Encoder();
const encode = (message: unknown[]): Uint8Array => encoder.encodeSharedRef(message);

/** `[1, Headers, InvocationId (nil: no answer expected), Target, [Arguments], [StreamIds]]` */
export const encodeMsgpackInvocation = (target: string, payload: unknown): Buffer =>
  binaryFrame(encode([MessageType.Invocation, NO_HEADERS, null, target, [asJsonValue(payload)], []]));

/** Always exactly `0x91 0x06` (the spec allows no headers on a ping). */
const PING = binaryFrame(encode([MessageType.Ping]));
export const encodeMsgpackPing = (): Buffer => PING;

/** `[7, Error (nil: none), AllowReconnect]`, as ASP.NET Core writes it. */
export const encodeMsgpackClose = (error: string | undefined, allowReconnect: boolean): Buffer =>
  binaryFrame(encode([MessageType.Close, error ?? null, allowReconnect]));

/** `[3, Headers, InvocationId, 1 (error result), Error]` */
export const encodeMsgpackCompletionError = (invocationId: string, error: string): Buffer =>
  binaryFrame(encode([MessageType.Completion, NO_HEADERS, invocationId, 1, error]));

/** `[3, Headers, InvocationId, 2 (void result)]` */
export const encodeMsgpackCompletion = (invocationId: string): Buffer => binaryFrame(encode([MessageType.Completion, NO_HEADERS, invocationId, 2]));

// ---------- messages from the client ----------

/**
 * Decodes one message body. Lengths inside are capped by the frame's own size limit, so a forged
 * array or string header cannot make the decoder reserve more than the frame could hold.
 */
export function parseMsgpackMessage(body: Uint8Array, decoder: Decoder): ClientMessage {
  let value: unknown;
  try {
    value = decoder.decode(body);
  } catch {
    return { kind: 'invalid', reason: 'message is not valid MessagePack' };
  }
  if (!Array.isArray(value) || value.length === 0) return { kind: 'invalid', reason: 'message is not a non-empty array' };
  const type: unknown = value[0];
  if (typeof type !== 'number' || !Number.isInteger(type)) return { kind: 'invalid', reason: 'message has no integer type' };
  switch (type) {
    case MessageType.Ping:
      return { kind: 'ping' };
    case MessageType.Close:
      return { kind: 'close' };
    case MessageType.Invocation:
    case MessageType.StreamInvocation: {
      const [, headers, invocationId, target, args] = value as unknown[];
      if (value.length < 5 || typeof headers !== 'object' || headers === null || !Array.isArray(args)) {
        return { kind: 'invalid', reason: 'invocation has not the [type, headers, id, target, arguments] shape' };
      }
      if (typeof target !== 'string') return { kind: 'invalid', reason: 'invocation has no string target' };
      if (invocationId === null && type === MessageType.Invocation) return { kind: 'invocation', target, arguments: args };
      if (typeof invocationId !== 'string') return { kind: 'invalid', reason: 'invocation has a non-string invocation id' };
      if (type === MessageType.StreamInvocation) return { kind: 'invocation', target, invocationId, arguments: args, stream: true };
      return { kind: 'invocation', target, invocationId, arguments: args };
    }
    default:
      return { kind: 'ignored', type };
  }
}

/**
 * Reads a connection's binary WebSocket messages: a message may carry several frames, and a frame
 * may be split across messages, so the unfinished tail is kept (never more than one frame of at
 * most `maxFrameBytes`: a longer frame is refused as soon as its prefix is read).
 */
export function createMsgpackReader(maxFrameBytes: number): (chunk: Buffer) => ClientMessage[] {
  const limit = { maxStrLength: maxFrameBytes, maxBinLength: maxFrameBytes, maxArrayLength: maxFrameBytes, maxMapLength: maxFrameBytes, maxExtLength: maxFrameBytes };
  const decoder = new Decoder(limit);
  let pending: Buffer | undefined;
  return (chunk) => {
    const buf = pending ? Buffer.concat([pending, chunk]) : chunk;
    pending = undefined;
    const messages: ClientMessage[] = [];
    let offset = 0;
    while (offset < buf.length) {
      const prefix = readLengthPrefix(buf, offset);
      if (prefix === 'incomplete') break;
      if (prefix === 'invalid') return [...messages, { kind: 'invalid', reason: 'frame has an invalid length prefix' }];
      if (prefix.size > maxFrameBytes) return [...messages, { kind: 'too_large' }];
      const end = offset + prefix.prefixBytes + prefix.size;
      if (end > buf.length) break;
      messages.push(
        prefix.size === 0
          ? { kind: 'invalid', reason: 'frame is empty' }
          : parseMsgpackMessage(buf.subarray(offset + prefix.prefixBytes, end), decoder),
      );
      offset = end;
    }
    if (offset < buf.length) pending = Buffer.from(buf.subarray(offset));
    return messages;
  };
}

export const messagePackFormat: WireFormat = {
  name: 'messagepack',
  binary: true,
  invocation: encodeMsgpackInvocation,
  ping: encodeMsgpackPing,
  close: encodeMsgpackClose,
  completionError: encodeMsgpackCompletionError,
  completion: encodeMsgpackCompletion,
  reader: createMsgpackReader,
};
