import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encode } from '@msgpack/msgpack';
import { MessageType } from '@microsoft/signalr';
import { WebSocket } from 'ws';
import { signToken } from '../../../src/platform/http/auth.ts';
import { userGroup } from '../../../src/platform/realtime/groups.ts';
import { binaryFrame } from '../../../src/platform/realtime/msgpack-protocol.ts';
import { RECORD_SEPARATOR as RS } from '../../../src/platform/realtime/protocol.ts';
import { connectClient, connectRaw, connectRawMsgpack, newUserId, startHubApp, TEST_SECRET, tokenFor } from '../../support/signalr.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

describe('hub with the official MessagePack client (@microsoft/signalr-protocol-msgpack)', () => {
  test('a MessagePack client receives a chat message with the same values a JSON client in the chat receives', async () => {
    const chatId = newUserId();
    const { hub, url } = await startHubApp({ resolveGroups: async () => [`chat:${chatId}`] });
    const packed = await connectClient(url, await tokenFor(newUserId()), { protocol: 'messagepack', events: ['message_received'] });
    const json = await connectClient(url, await tokenFor(newUserId()), { events: ['message_received'] });

    const sentAt = new Date('2026-12-01T22:00:00.000Z');
    await hub.send(`chat:${chatId}`, 'message_received', { ChatId: chatId, Seq: 7, Body: 'привет', SentAt: sentAt, Kind: 'Text' });

    await waitFor('both deliveries', () => packed.received.length === 1 && json.received.length === 1);
    const expected = { ChatId: chatId, Seq: 7, Body: 'привет', SentAt: '2026-12-01T22:00:00.000Z', Kind: 'Text' };
    assert.deepEqual(packed.received, [{ event: 'message_received', payload: expected }]);
    assert.deepEqual(json.received, packed.received);
  });

  test('a MessagePack client that skips negotiation connects and receives a send to its user group', async () => {
    const { hub, url } = await startHubApp();
    const userId = newUserId();
    const client = await connectClient(url, await tokenFor(userId), { protocol: 'messagepack', skipNegotiation: true, events: ['contact_request_received'] });
    await hub.send(userGroup(userId), 'contact_request_received', { RefId: 'r-1' });
    await waitFor('the invocation', () => client.received.length === 1);
    assert.deepEqual(client.received[0], { event: 'contact_request_received', payload: { RefId: 'r-1' } });
  });

  test('invoking an unknown hub method is answered with a completion carrying the error; a fire-and-forget call gets no answer', async () => {
    const { hub, url } = await startHubApp();
    const userId = newUserId();
    const client = await connectClient(url, await tokenFor(userId), { protocol: 'messagepack', events: ['after'] });

    await assert.rejects(client.connection.invoke('SendMessage', { text: 'hi' }), /Unknown hub method 'SendMessage'/);
    const streamError = await new Promise<Error>((resolve) =>
      client.connection.stream('Feed').subscribe({ next: () => {}, complete: () => resolve(new Error('completed without error')), error: resolve }),
    );
    assert.match(String(streamError), /Unknown hub method 'Feed'/);
    await client.connection.send('Typing', { chatId: 'c' }); // no invocation id: nothing comes back
    await hub.send(userGroup(userId), 'after', { n: 1 });
    await waitFor('a later send', () => client.received.length === 1);
    assert.equal(client.connection.state, 'Connected');
  });

  test('the connection is closed with a close message allowing a reconnect once its token expires', async () => {
    const { url, wsUrl, registry } = await startHubApp({ pingIntervalMs: 200, clientTimeoutMs: 60_000 });
    const shortLived = () => signToken({ userId: newUserId(), admin: false }, TEST_SECRET, { expiresIn: '3s' });
    const client = await connectClient(url, await shortLived(), { protocol: 'messagepack' });
    const raw = await connectRawMsgpack(wsUrl, await shortLived());

    await waitFor('the close on expiry', () => client.closed && raw.isClosed(), 10_000);
    assert.match(String(client.closedWith), /access token expired/);
    assert.deepEqual(
      raw.messages.filter((m) => m.type === MessageType.Close),
      [{ type: MessageType.Close, error: 'Unauthorized: the access token expired.', allowReconnect: true }],
    );
    await waitFor('the disconnects counted', async () => (await metricValue(registry, 'hub_disconnects_total', { reason: 'token_expired' })) === 2);
  });

  test('close() sends MessagePack clients a close message naming the shutdown', async () => {
    const { hub, url } = await startHubApp();
    const client = await connectClient(url, await tokenFor(newUserId()), { protocol: 'messagepack' });
    await hub.close();
    await waitFor('the client to see the close', () => client.closed);
    assert.match(String(client.closedWith), /shutting down/);
  });
});

describe('MessagePack on the wire (raw WebSocket)', () => {
  test('after a binary handshake answer every frame is binary: invocations, completions and pings at the interval', async () => {
    const { hub, wsUrl } = await startHubApp({ pingIntervalMs: 200, clientTimeoutMs: 60_000 });
    const userId = newUserId();
    const raw = await connectRawMsgpack(wsUrl, await tokenFor(userId));
    raw.ws.send(binaryFrame(encode([MessageType.Invocation, {}, '5', 'Nope', [], []])));
    await hub.send(userGroup(userId), 'numbered', { n: 1 });
    await waitFor('the completion, the invocation and two pings', () => raw.messages.filter((m) => m.type === MessageType.Ping).length >= 2 && raw.messages.length >= 4);
    assert.deepEqual(raw.messages.find((m) => m.type === MessageType.Completion), {
      type: MessageType.Completion,
      headers: {},
      invocationId: '5',
      error: "Unknown hub method 'Nope'",
      result: undefined,
    });
    assert.deepEqual(raw.messages.find((m) => m.type === MessageType.Invocation), {
      type: MessageType.Invocation,
      headers: {},
      target: 'numbered',
      arguments: [{ n: 1 }],
      streamIds: [],
    });
    assert.equal(raw.allBinary(), true);
  });

  test('frames sent in the same WebSocket message as the handshake are read in the protocol it picked', async () => {
    const { wsUrl } = await startHubApp();
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${await tokenFor(newUserId())}` } });
    const received: Buffer[] = [];
    ws.on('message', (d: Buffer) => received.push(d));
    await new Promise((resolve) => ws.once('open', resolve));
    const invocation = binaryFrame(encode([MessageType.Invocation, {}, '7', 'Early', [], []]));
    ws.send(Buffer.concat([Buffer.from(`{"protocol":"messagepack","version":1}${RS}`), invocation]));
    await waitFor('the handshake answer and the completion', () => received.length >= 2);
    assert.equal(received[0]!.toString(), `{}${RS}`);
    assert.deepEqual(
      [...received[1]!],
      [...binaryFrame(encode([MessageType.Completion, {}, '7', 1, "Unknown hub method 'Early'"]))],
    );
    ws.terminate();
  });

  test('a JSON client that hand-shakes version 0 (as signalrcore does) is accepted and served', async () => {
    const { hub, wsUrl } = await startHubApp();
    const userId = newUserId();
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${await tokenFor(userId)}` } });
    const received: string[] = [];
    ws.on('message', (d) => received.push(d.toString()));
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(`{"protocol":"json","version":0}${RS}`);
    await waitFor('the handshake answer', () => received.length === 1);
    assert.equal(received[0], `{}${RS}`);
    await hub.send(userGroup(userId), 'numbered', { n: 1 });
    await waitFor('the invocation', () => received.length === 2);
    assert.deepEqual(JSON.parse(received[1]!.slice(0, -1)), { type: 1, target: 'numbered', arguments: [{ n: 1 }] });
    ws.terminate();
  });
});

/** Sends `handshake` on a fresh socket; resolves with the answer (text) once the server closed the socket. */
async function refusedHandshake(wsUrl: string, handshake: string): Promise<string> {
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${await tokenFor(newUserId())}` } });
  await new Promise((resolve) => ws.once('open', resolve));
  const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
  const closed = new Promise((resolve) => ws.once('close', resolve));
  ws.send(handshake);
  const answer = await reply;
  await closed;
  return answer;
}

describe('bad input is refused cleanly (raw WebSocket)', () => {
  test('an unknown protocol, or a version above the served one, gets the reference server\'s handshake error and the socket is closed', async () => {
    const { wsUrl, hub, registry } = await startHubApp();
    assert.equal(await refusedHandshake(wsUrl, `{"protocol":"blazorpack","version":1}${RS}`), `{"error":"The protocol 'blazorpack' is not supported."}${RS}`);
    assert.equal(await refusedHandshake(wsUrl, `{"protocol":"json","version":2}${RS}`), `{"error":"The server does not support version 2 of the 'json' protocol."}${RS}`);
    assert.equal(
      await refusedHandshake(wsUrl, `{"protocol":"messagepack","version":2}${RS}`),
      `{"error":"The server does not support version 2 of the 'messagepack' protocol."}${RS}`,
    );
    await waitFor('the refused sockets to be gone', () => hub.connectionCount() === 0);
    assert.equal(await metricValue(registry, 'hub_disconnects_total', { reason: 'handshake_failed' }), 3);
  });

  test('a malformed MessagePack frame closes the connection with a close message and an error; other connections are served on', async () => {
    const { hub, wsUrl, registry } = await startHubApp();
    const bystanderId = newUserId();
    const bystander = await connectRawMsgpack(wsUrl, await tokenFor(bystanderId));
    const frames = [
      Buffer.from([0x02, 0x01, 0xc1]), // 0xc1 is never used in MessagePack
      binaryFrame(encode({ type: 1 })), // a map, not an array
      binaryFrame(encode([1, {}, '1', 42, []])), // an invocation whose target is not a string
      Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), // a length prefix past 5 bytes
    ];
    for (const frame of frames) {
      const raw = await connectRawMsgpack(wsUrl, await tokenFor(newUserId()));
      raw.ws.send(frame);
      await raw.closed;
      assert.deepEqual(raw.messages, [{ type: MessageType.Close, error: 'Connection closed with an error: invalid message.', allowReconnect: false }], frame.toString('hex'));
    }
    // Counted when the server's socket reports the close, which can come after the client saw it.
    await waitFor('every close counted', async () => (await metricValue(registry, 'hub_disconnects_total', { reason: 'protocol_error' })) === frames.length);
    await hub.send(userGroup(bystanderId), 'still_here', {});
    await waitFor('the bystander still served', () => bystander.messages.some((m) => m.type === MessageType.Invocation));
  });

  test('a MessagePack frame past the size limit closes the connection with a close message before its body is buffered', async () => {
    const { wsUrl } = await startHubApp();
    const raw = await connectRawMsgpack(wsUrl, await tokenFor(newUserId()));
    // A length prefix declaring 1 MiB (above the 64 KiB limit), followed by only the start of the body.
    raw.ws.send(Buffer.concat([binaryFrame(new Uint8Array(1024 * 1024)).subarray(0, 3), Buffer.from([0x96, 0x01])]));
    await raw.closed;
    assert.deepEqual(raw.messages, [
      { type: MessageType.Close, error: 'Connection closed with an error: the message is larger than the server accepts.', allowReconnect: false },
    ]);
  });

  test('a handshake that grows past the size limit across WebSocket messages without a separator is refused', async () => {
    const { wsUrl } = await startHubApp();
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${await tokenFor(newUserId())}` } });
    await new Promise((resolve) => ws.once('open', resolve));
    const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
    const closed = new Promise((resolve) => ws.once('close', resolve));
    ws.send(`{"protocol":"json","version":1,"pad":"${'x'.repeat(40 * 1024)}`);
    ws.send('x'.repeat(40 * 1024));
    assert.equal(
      await reply,
      `{"error":"An unexpected error occurred during connection handshake. InvalidDataException: The handshake request is too long."}${RS}`,
    );
    await closed;
  });

  test('a JSON record that grows past the size limit across WebSocket messages closes the connection with a close message', async () => {
    const { wsUrl } = await startHubApp();
    const raw = await connectRaw(wsUrl, await tokenFor(newUserId()));
    const part = `{"type":1,"target":"${'x'.repeat(40 * 1024)}`; // no separator: the record never ends
    raw.ws.send(part);
    raw.ws.send('x'.repeat(40 * 1024));
    await raw.closed;
    assert.deepEqual(raw.records, [{ type: 7, error: 'Connection closed with an error: the message is larger than the server accepts.', allowReconnect: false }]);
  });
});
