import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encode } from '@msgpack/msgpack';
import { MessageType as ClientType, NullLogger, type HubMessage } from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import {
  binaryFrame,
  createMsgpackReader,
  encodeMsgpackClose,
  encodeMsgpackCompletionError,
  encodeMsgpackInvocation,
  encodeMsgpackPing,
  readLengthPrefix,
} from '../../../src/platform/realtime/msgpack-protocol.ts';

/** The official client's own MessagePack protocol: it parses what the hub writes and writes what the hub reads. */
const official = new MessagePackHubProtocol();
const parsedByClient = (frame: Buffer): HubMessage[] =>
  official.parseMessages(frame.buffer.slice(frame.byteOffset, frame.byteOffset + frame.length) as ArrayBuffer, NullLogger.instance);
const writtenByClient = (message: HubMessage): Buffer => Buffer.from(official.writeMessage(message));

describe('MessagePack framing (varint length prefix)', () => {
  test('lengths below 128 take one byte; longer ones 7 bits a byte, low bits first', () => {
    assert.deepEqual([...binaryFrame(new Uint8Array(127)).subarray(0, 1)], [0x7f]);
    assert.deepEqual([...binaryFrame(new Uint8Array(128)).subarray(0, 2)], [0x80, 0x01]);
    assert.deepEqual([...binaryFrame(new Uint8Array(16_384)).subarray(0, 3)], [0x80, 0x80, 0x01]);
    assert.deepEqual(readLengthPrefix(Uint8Array.from([0x80, 0x80, 0x01]), 0), { size: 16_384, prefixBytes: 3 });
  });

  test('a prefix cut short is incomplete; one longer than 5 bytes or past 2 GiB is invalid', () => {
    assert.equal(readLengthPrefix(Uint8Array.from([0x80]), 0), 'incomplete');
    assert.equal(readLengthPrefix(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x08]), 0), 'invalid');
    assert.equal(readLengthPrefix(Uint8Array.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), 0), 'invalid');
    assert.deepEqual(readLengthPrefix(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x07]), 0), { size: 2 ** 31 - 1, prefixBytes: 5 });
  });
});

describe('MessagePack frames the hub writes, as the official client reads them', () => {
  test('an invocation carries the event as target and the payload, with JSON values (dates as ISO strings), as its only argument', () => {
    const at = new Date('2026-12-01T10:00:00.000Z');
    const [message] = parsedByClient(encodeMsgpackInvocation('message_received', { ChatId: 'c', Seq: 7, SentAt: at, Gone: undefined }));
    assert.deepEqual(message, {
      type: ClientType.Invocation,
      headers: {},
      target: 'message_received',
      arguments: [{ ChatId: 'c', Seq: 7, SentAt: '2026-12-01T10:00:00.000Z' }],
      streamIds: [],
    });
    assert.deepEqual((parsedByClient(encodeMsgpackInvocation('x', undefined))[0] as { arguments: unknown[] }).arguments, [null]);
  });

  test('ping is exactly 0x91 0x06; close and completion error have the spec shapes', () => {
    assert.deepEqual([...encodeMsgpackPing()], [0x02, 0x91, 0x06]);
    assert.deepEqual(parsedByClient(encodeMsgpackClose('slow consumer', true)), [{ type: ClientType.Close, error: 'slow consumer', allowReconnect: true }]);
    assert.deepEqual(parsedByClient(encodeMsgpackClose(undefined, false)), [{ type: ClientType.Close, error: null, allowReconnect: false }]);
    const [completion] = parsedByClient(encodeMsgpackCompletionError('9', "Unknown hub method 'X'"));
    assert.deepEqual(completion, { type: ClientType.Completion, headers: {}, invocationId: '9', error: "Unknown hub method 'X'", result: undefined });
  });

  test('several frames in one buffer are read one after the other', () => {
    const both = Buffer.concat([encodeMsgpackPing(), encodeMsgpackInvocation('a', 1)]);
    assert.deepEqual(
      parsedByClient(both).map((m) => m.type),
      [ClientType.Ping, ClientType.Invocation],
    );
  });
});

describe('MessagePack frames the hub reads', () => {
  const LIMIT = 1024;

  test('invocations (with and without an id), stream invocations, pings and closes written by the official client', () => {
    const read = createMsgpackReader(LIMIT);
    const frames = Buffer.concat([
      writtenByClient({ type: ClientType.Invocation, invocationId: '1', target: 'Send', arguments: ['hi'], streamIds: [] }),
      writtenByClient({ type: ClientType.Invocation, target: 'Typing', arguments: [], streamIds: [] }),
      writtenByClient({ type: ClientType.StreamInvocation, invocationId: '2', target: 'Stream', arguments: [], streamIds: [] }),
      writtenByClient({ type: ClientType.Ping }),
      writtenByClient({ type: ClientType.CancelInvocation, invocationId: '2' }),
      writtenByClient({ type: ClientType.Close }),
    ]);
    assert.deepEqual(read(frames), [
      { kind: 'invocation', target: 'Send', invocationId: '1', arguments: ['hi'] },
      { kind: 'invocation', target: 'Typing', arguments: [] },
      { kind: 'invocation', target: 'Stream', invocationId: '2', arguments: [], stream: true },
      { kind: 'ping' },
      { kind: 'ignored', type: ClientType.CancelInvocation },
      { kind: 'close' },
    ]);
  });

  test('a frame split across WebSocket messages is read once it is complete', () => {
    const read = createMsgpackReader(LIMIT);
    const frame = writtenByClient({ type: ClientType.Invocation, invocationId: '1', target: 'Send', arguments: ['x'.repeat(300)], streamIds: [] });
    assert.deepEqual(read(frame.subarray(0, 1)), [], 'half a length prefix');
    assert.deepEqual(read(frame.subarray(1, 100)), []);
    assert.deepEqual(read(Buffer.concat([frame.subarray(100), encodeMsgpackPing()])), [{ kind: 'invocation', target: 'Send', invocationId: '1', arguments: ['x'.repeat(300)] }, { kind: 'ping' }]);
  });

  test('malformed frames are invalid', () => {
    const bad: [string, Buffer][] = [
      ['not MessagePack', Buffer.from([0x01, 0xc1])],
      ['truncated body', binaryFrame(Uint8Array.from([0x96, 0x01]))],
      ['not an array', binaryFrame(encode({ type: 1 }))],
      ['empty array', binaryFrame(encode([]))],
      ['type not an integer', binaryFrame(encode(['1']))],
      ['invocation without target', binaryFrame(encode([1, {}, '1', 5, []]))],
      ['invocation too short', binaryFrame(encode([1, {}, '1']))],
      ['stream invocation without id', binaryFrame(encode([4, {}, null, 'S', [], []]))],
      ['empty frame', Buffer.from([0x00])],
      ['prefix past 5 bytes', Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01])],
      ['bytes after the message', binaryFrame(Uint8Array.from([0x91, 0x06, 0x06]))],
    ];
    for (const [name, frame] of bad) assert.equal(createMsgpackReader(LIMIT)(frame)[0]?.kind, 'invalid', name);
  });

  test('a frame whose prefix declares more than the limit is refused before its body arrives', () => {
    const read = createMsgpackReader(LIMIT);
    const header = binaryFrame(new Uint8Array(LIMIT + 1)).subarray(0, 2);
    assert.deepEqual(read(Buffer.concat([encodeMsgpackPing(), header])), [{ kind: 'ping' }, { kind: 'too_large' }]);
    assert.deepEqual(createMsgpackReader(LIMIT)(binaryFrame(encode([6, 'x'.repeat(LIMIT - 10)])))[0], { kind: 'ping' }, 'just below the limit');
  });
});
