import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  RECORD_SEPARATOR as RS,
  encodeClose,
  encodeCompletionError,
  encodeHandshakeResponse,
  encodeInvocation,
  encodePing,
  negotiateReply,
  parseClientMessage,
  parseHandshakeRequest,
  requestedNegotiateVersion,
  splitHandshake,
  splitRecords,
} from '../../../src/platform/realtime/protocol.ts';
import { signConnectionToken, verifyConnectionToken } from '../../../src/platform/realtime/connection-token.ts';
import { decodeBackplaneMessage, encodeBackplaneMessage } from '../../../src/platform/realtime/backplane.ts';
import { GroupIndex } from '../../../src/platform/realtime/groups.ts';

describe('record framing', () => {
  test('a message carrying several records yields each of them and no remainder', () => {
    assert.deepEqual(splitRecords('', `{"type":6}${RS}{"type":6}${RS}`), { records: ['{"type":6}', '{"type":6}'], rest: '' });
  });

  test('an unterminated tail is kept and completed by the next message', () => {
    const first = splitRecords('', `{"type":6}${RS}{"type"`);
    assert.deepEqual(first, { records: ['{"type":6}'], rest: '{"type"' });
    assert.deepEqual(splitRecords(first.rest, `:7}${RS}`), { records: ['{"type":7}'], rest: '' });
  });

  test('empty records between separators are dropped', () => {
    assert.deepEqual(splitRecords('', `${RS}${RS}{}${RS}`).records, ['{}']);
  });
});

describe('handshake', () => {
  test('json and messagepack are accepted at every version the hub serves (0 and 1), as ASP.NET Core accepts every version up to its own', () => {
    for (const protocol of ['json', 'messagepack'] as const) {
      for (const version of [0, 1]) {
        assert.deepEqual(parseHandshakeRequest(`{"protocol":"${protocol}","version":${version}}`), { ok: true, protocol });
      }
    }
  });

  test('an unknown protocol or a version above the served one is refused with the reference server\'s text', () => {
    const error = (record: string) => {
      const result = parseHandshakeRequest(record);
      assert.equal(result.ok, false, record);
      return !result.ok && result.error;
    };
    assert.equal(error('{"protocol":"xml","version":1}'), "The protocol 'xml' is not supported.");
    assert.equal(error('{"protocol":"json","version":2}'), "The server does not support version 2 of the 'json' protocol.");
    assert.equal(error('{"protocol":"messagepack","version":2}'), "The server does not support version 2 of the 'messagepack' protocol.");
    assert.equal(error('{"protocol":"json","version":-1}'), "The server does not support version -1 of the 'json' protocol.");
  });

  test('a malformed handshake is refused with the reference server\'s handshake error and the reason', () => {
    for (const bad of ['', ' ', 'nope', '[]', '{"protocol":"json"}', '{"version":1}', '{"protocol":1,"version":1}', '{"protocol":"json","version":"1"}', '{"protocol":"json","version":1.5}']) {
      const result = parseHandshakeRequest(bad);
      assert.equal(result.ok, false, bad);
      assert.match(!result.ok ? result.error : '', /^An unexpected error occurred during connection handshake\. InvalidDataException: \S/, bad);
    }
  });

  test('the handshake record is found across chunks; the bytes after it are returned untouched', () => {
    const first = splitHandshake(undefined, Buffer.from(`{"protocol":"messagepack",`), 100);
    assert.equal(first.kind, 'incomplete');
    const tail = first.kind === 'incomplete' ? first.tail : undefined;
    const done = splitHandshake(tail, Buffer.concat([Buffer.from(`"version":1}${RS}`), Buffer.from([0x02, 0x91, 0x06])]), 100);
    assert.deepEqual(done, { kind: 'record', record: '{"protocol":"messagepack","version":1}', rest: Buffer.from([0x02, 0x91, 0x06]) });
    assert.deepEqual(splitHandshake(undefined, Buffer.from('x'.repeat(101)), 100), { kind: 'too_long' });
  });

  test('the handshake response is {} or {"error"} followed by the separator', () => {
    assert.equal(encodeHandshakeResponse(), `{}${RS}`);
    assert.deepEqual(JSON.parse(encodeHandshakeResponse('no').slice(0, -1)), { error: 'no' });
  });
});

describe('client messages', () => {
  test('pings, closes and invocations are recognised', () => {
    assert.deepEqual(parseClientMessage('{"type":6}'), { kind: 'ping' });
    assert.deepEqual(parseClientMessage('{"type":7}'), { kind: 'close' });
    assert.deepEqual(parseClientMessage('{"type":1,"target":"Send","arguments":[]}'), { kind: 'invocation', target: 'Send', arguments: [] });
    assert.deepEqual(parseClientMessage('{"type":1,"invocationId":"3","target":"Send","arguments":["c1"]}'), {
      kind: 'invocation',
      target: 'Send',
      invocationId: '3',
      arguments: ['c1'],
    });
    assert.deepEqual(parseClientMessage('{"type":4,"invocationId":"4","target":"Stream","arguments":[]}'), {
      kind: 'invocation',
      target: 'Stream',
      invocationId: '4',
      arguments: [],
      stream: true,
    });
    assert.deepEqual(parseClientMessage('{"type":1,"target":"Send","arguments":"not a list"}'), { kind: 'invocation', target: 'Send', arguments: [] }, 'arguments that are not a list are none');
  });

  test('types the hub has no use for are ignored, not errors', () => {
    assert.deepEqual(parseClientMessage('{"type":3,"invocationId":"1"}'), { kind: 'ignored', type: 3 });
    assert.deepEqual(parseClientMessage('{"type":42}'), { kind: 'ignored', type: 42 });
  });

  test('malformed records are invalid', () => {
    for (const bad of ['{', '"x"', 'null', '{"type":"1"}', '{"type":1}', '{"type":1,"target":"a","invocationId":5}']) {
      assert.equal(parseClientMessage(bad).kind, 'invalid', bad);
    }
  });
});

describe('server messages', () => {
  const body = (framed: string) => {
    assert.ok(framed.endsWith(RS));
    return JSON.parse(framed.slice(0, -1));
  };

  test('an invocation carries the event name as target and the payload as its only argument', () => {
    assert.deepEqual(body(encodeInvocation('message_received', { ChatId: 'c', Seq: 1 })), {
      type: 1,
      target: 'message_received',
      arguments: [{ ChatId: 'c', Seq: 1 }],
    });
    assert.deepEqual(body(encodeInvocation('x', undefined)).arguments, [null]);
  });

  test('ping, close and completion error have the protocol shapes', () => {
    assert.deepEqual(body(encodePing()), { type: 6 });
    assert.deepEqual(body(encodeClose('slow consumer', true)), { type: 7, error: 'slow consumer', allowReconnect: true });
    assert.deepEqual(body(encodeClose(undefined, false)), { type: 7, allowReconnect: false });
    assert.deepEqual(body(encodeCompletionError('9', 'Unknown hub method')), { type: 3, invocationId: '9', error: 'Unknown hub method' });
  });
});

describe('negotiate', () => {
  test('version 1 clients get a separate connection token; WebSockets with text (JSON) and binary (MessagePack) frames is the only transport', () => {
    assert.deepEqual(negotiateReply(1, 'id-1', 'tok'), {
      negotiateVersion: 1,
      connectionId: 'id-1',
      connectionToken: 'tok',
      availableTransports: [{ transport: 'WebSockets', transferFormats: ['Text', 'Binary'] }],
    });
  });

  test('version 0 clients get negotiateVersion 0 and the token as their connection id, with no connectionToken', () => {
    assert.deepEqual(negotiateReply(0, 'id', 'tok'), {
      negotiateVersion: 0,
      connectionId: 'tok',
      availableTransports: [{ transport: 'WebSockets', transferFormats: ['Text', 'Binary'] }],
    });
  });

  test('the requested version is read as ASP.NET Core reads it: absent is 0, above 1 is 1, non-integers and negatives refused', () => {
    assert.deepEqual(requestedNegotiateVersion(undefined), { ok: true, version: 0 });
    assert.deepEqual(requestedNegotiateVersion('0'), { ok: true, version: 0 });
    assert.deepEqual(requestedNegotiateVersion('1'), { ok: true, version: 1 });
    assert.deepEqual(requestedNegotiateVersion('2'), { ok: true, version: 1 });
    assert.deepEqual(requestedNegotiateVersion(' +1 '), { ok: true, version: 1 });
    for (const bad of ['x', '', '1.0', '1e0', '99999999999']) {
      assert.deepEqual(requestedNegotiateVersion(bad), { ok: false, error: 'The client requested a non-integer protocol version.' }, bad);
    }
    assert.deepEqual(requestedNegotiateVersion('-1'), {
      ok: false,
      error: "The client requested version '-1', but the server does not support this version.",
    });
  });
});

describe('connection tokens', () => {
  const secret = 'a-secret-of-at-least-thirty-two-characters';
  const ticket = { connectionId: 'conn-1', userId: 'user-1', expiresAt: 10_000 };

  test('a token opens the connection it was issued for, for the user it was issued to, until it expires', () => {
    const token = signConnectionToken(ticket, secret);
    assert.deepEqual(verifyConnectionToken(token, secret, 'user-1', 9_999), ticket);
    assert.equal(verifyConnectionToken(token, secret, 'user-1', 10_000), undefined, 'expired');
    assert.equal(verifyConnectionToken(token, secret, 'user-2', 0), undefined, 'another user');
  });

  test('a token signed with another secret or altered is refused', () => {
    const token = signConnectionToken(ticket, secret);
    assert.equal(verifyConnectionToken(token, `${secret}x`, 'user-1', 0), undefined);
    const forged = signConnectionToken({ ...ticket, expiresAt: 99_999 }, secret).split('.')[0] + '.' + token.split('.')[1];
    assert.equal(verifyConnectionToken(forged, secret, 'user-1', 0), undefined);
    assert.equal(verifyConnectionToken('garbage', secret, 'user-1', 0), undefined);
  });
});

describe('backplane messages', () => {
  test('sends (with and without a membership version), membership changes and disconnects survive the wire', () => {
    const send = { kind: 'send', origin: 'r1', group: 'chat:1', event: 'message_received', payload: { Seq: 1 } } as const;
    const versioned = { ...send, version: 7 } as const;
    const join = { kind: 'join', origin: 'r1', userId: 'u', group: 'chat:1' } as const;
    const disconnect = { kind: 'disconnect', origin: 'r1', userId: 'u', reason: 'Forbidden.' } as const;
    for (const m of [send, versioned, join, disconnect]) assert.deepEqual(decodeBackplaneMessage(encodeBackplaneMessage(m)), m);
  });

  test('malformed messages decode to undefined', () => {
    const bad = [
      '{',
      '{}',
      '{"kind":"send","origin":"r","group":"g"}',
      '{"kind":"join","origin":"r","group":"g"}',
      '{"kind":"send","origin":"r","group":"g","event":"e","version":"7"}',
      '{"kind":"disconnect","origin":"r","userId":"u"}',
    ];
    for (const raw of bad) {
      assert.equal(decodeBackplaneMessage(raw), undefined, raw);
    }
  });
});

describe('group index', () => {
  const conn = (userId: string) => ({ userId, groups: new Set<string>() });

  test('tracks members per group and per user, and forgets groups and users with their last connection', () => {
    const index = new GroupIndex<ReturnType<typeof conn>>();
    const a1 = conn('a');
    const a2 = conn('a');
    assert.equal(index.addConnection(a1), true, 'first connection of a');
    assert.equal(index.addConnection(a2), false);
    index.join(a1, 'chat:1');
    index.join(a2, 'chat:1');
    assert.equal(index.inGroup('chat:1')?.size, 2);
    index.leave(a1, 'chat:1');
    assert.deepEqual([...(index.inGroup('chat:1') ?? [])], [a2]);
    assert.equal(index.removeConnection(a1), false);
    assert.equal(index.removeConnection(a2), true, 'last connection of a');
    assert.equal(index.inGroup('chat:1'), undefined);
    assert.equal(index.ofUser('a'), undefined);
    assert.equal(index.groupCount, 0);
  });
});
