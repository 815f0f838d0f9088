import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { userGroup } from '../../../src/platform/realtime/groups.ts';
import { RECORD_SEPARATOR as RS } from '../../../src/platform/realtime/protocol.ts';
import { signToken } from '../../../src/platform/http/auth.ts';
import { connectClient, connectRaw, newUserId, startHubApp, TEST_SECRET, tokenFor } from '../../support/signalr.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

/** The HTTP status the WebSocket upgrade gets (101 when it opens; the socket is closed right away). */
function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('error', () => {});
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('open', () => {
      ws.terminate();
      resolve(101);
    });
  });
}

describe('hub with the official SignalR client', () => {
  test('a client that negotiates receives an invocation sent to its user group', async () => {
    const { hub, url, registry } = await startHubApp();
    const userId = newUserId();
    const client = await connectClient(url, await tokenFor(userId), { events: ['contact_request_received'] });
    assert.equal(await metricValue(registry, 'hub_connections_active'), 1);

    await hub.send(userGroup(userId), 'contact_request_received', { RefId: 'r-1' });

    await waitFor('the invocation', () => client.received.length === 1);
    assert.deepEqual(client.received, [{ event: 'contact_request_received', payload: { RefId: 'r-1' } }]);
    assert.ok((await metricValue(registry, 'hub_frames_sent_total', { kind: 'invocation' })) >= 1);
  });

  test('a client that skips negotiation joins the groups resolveGroups lists and receives a send to one', async () => {
    const chatId = newUserId();
    const { hub, url } = await startHubApp({ resolveGroups: async () => [`chat:${chatId}`] });
    const client = await connectClient(url, await tokenFor(newUserId()), { skipNegotiation: true, events: ['message_received'] });

    await hub.send(`chat:${chatId}`, 'message_received', { ChatId: chatId, Seq: 7 });

    await waitFor('the chat invocation', () => client.received.length === 1);
    assert.deepEqual(client.received[0], { event: 'message_received', payload: { ChatId: chatId, Seq: 7 } });
  });

  test('a send to a group with no connected sockets succeeds', async () => {
    const { hub } = await startHubApp();
    await hub.send('chat:nobody-here', 'message_received', { Seq: 1 });
  });

  test('without a valid token negotiate answers 401 { code, message } and the client cannot start', async () => {
    const { url, wsUrl, registry } = await startHubApp();

    const missing = await fetch(`${url}/negotiate?negotiateVersion=1`, { method: 'POST' });
    assert.equal(missing.status, 401);
    assert.deepEqual(Object.keys((await missing.json()) as object).sort(), ['code', 'message']);
    const forged = await fetch(`${url}/negotiate?negotiateVersion=1`, { method: 'POST', headers: { authorization: 'Bearer x.y.z' } });
    assert.equal(forged.status, 401);
    assert.equal(((await forged.json()) as { code: string }).code, 'AUTH_INVALID_TOKEN');
    // A body past the negotiate limit is refused before anything else, with the code the document lists.
    const large = await fetch(`${url}/negotiate?negotiateVersion=1`, { method: 'POST', body: 'x'.repeat(5000) });
    assert.deepEqual([large.status, ((await large.json()) as { code: string }).code], [413, 'FST_ERR_CTP_BODY_TOO_LARGE']);

    // The WebSocket upgrade itself is refused with a plain HTTP 401, before any socket exists.
    assert.equal(await upgradeStatus(wsUrl), 401);
    assert.equal(await upgradeStatus(`${wsUrl}?access_token=not-a-jwt`), 401);

    await assert.rejects(connectClient(url, undefined));
    await assert.rejects(connectClient(url, 'not-a-jwt', { skipNegotiation: true }));
    assert.ok((await metricValue(registry, 'hub_auth_failures_total')) >= 4);
    assert.equal(await metricValue(registry, 'hub_connections_active'), 0);
  });

  test('negotiate answers version 1 with a connection token that opens the WebSocket only for its user', async () => {
    const { url, wsUrl } = await startHubApp();
    const token = await tokenFor(newUserId());
    const res = await fetch(`${url}/negotiate?negotiateVersion=1`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { negotiateVersion: number; connectionToken: string; availableTransports: unknown };
    assert.equal(body.negotiateVersion, 1);
    assert.deepEqual(body.availableTransports, [{ transport: 'WebSockets', transferFormats: ['Text', 'Binary'] }]);

    const otherUser = await tokenFor(newUserId());
    assert.equal(await upgradeStatus(`${wsUrl}?id=${body.connectionToken}&access_token=${otherUser}`), 404, 'another user');
    assert.equal(await upgradeStatus(`${wsUrl}?id=${body.connectionToken}x&access_token=${token}`), 404, 'altered token');
    assert.equal(await upgradeStatus(`${wsUrl}?id=${body.connectionToken}&access_token=${token}`), 101, 'its own user');
  });

  test('negotiate answers as ASP.NET Core: version 0 without the parameter (its connectionId opens the WebSocket), 1 above 1, 400 for a non-integer', async () => {
    const { url, wsUrl } = await startHubApp();
    const token = await tokenFor(newUserId());
    const negotiate = (query: string) => fetch(`${url}/negotiate${query}`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });

    const v0 = (await (await negotiate('')).json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(v0).sort(), ['availableTransports', 'connectionId', 'negotiateVersion']);
    assert.equal(v0.negotiateVersion, 0);
    assert.equal(await upgradeStatus(`${wsUrl}?id=${v0.connectionId as string}&access_token=${token}`), 101, 'version 0 uses the connectionId as id');
    assert.equal(((await (await negotiate('?negotiateVersion=5')).json()) as { negotiateVersion: number }).negotiateVersion, 1);

    for (const [query, message] of [
      ['?negotiateVersion=abc', 'The client requested a non-integer protocol version.'],
      ['?negotiateVersion=-1', "The client requested version '-1', but the server does not support this version."],
    ] as const) {
      const res = await negotiate(query);
      assert.equal(res.status, 400, query);
      assert.deepEqual(await res.json(), { code: 'HUB_NEGOTIATE_VERSION_INVALID', message });
    }
  });

  test('addUserToGroup reaches open connections at once and removeUserFromGroup stops delivery', async () => {
    const { hub, url } = await startHubApp();
    const userId = newUserId();
    const group = `chat:${newUserId()}`;
    const client = await connectClient(url, await tokenFor(userId), { events: ['chat_updated'] });

    await hub.addUserToGroup(userId, group);
    await hub.send(group, 'chat_updated', { n: 1 });
    await waitFor('delivery after joining', () => client.received.length === 1);

    await hub.removeUserFromGroup(userId, group);
    await hub.send(group, 'chat_updated', { n: 2 });
    // A marker on the user group is sent after the group send: once it arrives, the group send would have too.
    await hub.send(userGroup(userId), 'chat_updated', { n: 'marker' });
    await waitFor('the marker', () => client.received.length >= 2);
    assert.deepEqual(
      client.received.map((r) => r.payload),
      [{ n: 1 }, { n: 'marker' }],
    );
  });

  test('membership changes made while the groups of a new connection are being resolved are kept', async () => {
    const stale = `chat:${newUserId()}`;
    const added = `chat:${newUserId()}`;
    let resolverCalled = false;
    let release: () => void = () => {};
    const { hub, url } = await startHubApp({
      resolveGroups: async () => {
        resolverCalled = true;
        await new Promise<void>((r) => (release = r));
        return [stale]; // read before the user was removed from it
      },
    });
    const userId = newUserId();
    const starting = connectClient(url, await tokenFor(userId), { events: ['chat_updated'] });
    await waitFor('resolveGroups to be called', () => resolverCalled);
    await hub.removeUserFromGroup(userId, stale);
    await hub.addUserToGroup(userId, added);
    release();
    const client = await starting;

    await hub.send(stale, 'chat_updated', { group: 'stale' });
    await hub.send(added, 'chat_updated', { group: 'added' });
    await waitFor('the send to the added group', () => client.received.length >= 1);
    await hub.send(userGroup(userId), 'chat_updated', { group: 'marker' });
    await waitFor('the marker', () => client.received.length >= 2);
    assert.deepEqual(
      client.received.map((r) => (r.payload as { group: string }).group),
      ['added', 'marker'],
    );
  });

  test('when resolveGroups fails the connection is refused and the client start() rejects', async () => {
    const { url, hub } = await startHubApp({
      resolveGroups: async () => {
        throw new Error('database unavailable');
      },
    });
    await assert.rejects(connectClient(url, await tokenFor(newUserId())), /could not load the groups/);
    await waitFor('the refused socket to close', () => hub.connectionCount() === 0);
  });

  test('a client invocation gets a completion error: the hub has no client-callable methods', async () => {
    const { url } = await startHubApp();
    const client = await connectClient(url, await tokenFor(newUserId()));
    await assert.rejects(client.connection.invoke('SendMessage', 'hi'), /Unknown hub method 'SendMessage'/);
    assert.equal(client.connection.state, 'Connected');
  });

  test('close() sends every client a close message and closes the sockets', async () => {
    const { hub, url, registry } = await startHubApp();
    const client = await connectClient(url, await tokenFor(newUserId()));
    await hub.close();
    await waitFor('the client to see the close', () => client.closed);
    assert.match(String(client.closedWith), /shutting down/);
    assert.equal(await metricValue(registry, 'hub_connections_active'), 0);
    assert.equal(await metricValue(registry, 'hub_disconnects_total', { reason: 'server_shutdown' }), 1);
  });
});

describe('hub connections and token expiry', () => {
  test('a connection is closed (reconnect allowed) once the token it was opened with expires; a longer-lived one stays', async () => {
    const { url, registry } = await startHubApp({ pingIntervalMs: 200, clientTimeoutMs: 60_000 });
    const shortLived = await signToken({ userId: newUserId(), admin: false }, TEST_SECRET, { expiresIn: '4s' });
    const expiring = await connectClient(url, shortLived);
    const lasting = await connectClient(url, await tokenFor(newUserId()));

    await waitFor('the connection of the expired token to be closed', () => expiring.closed, 10_000);
    assert.match(String(expiring.closedWith), /access token expired/);
    assert.equal(lasting.closed, false);
    assert.equal(lasting.connection.state, 'Connected');
    // Counted when the server's socket reports the close, which can come after the client saw it.
    await waitFor('the disconnect counted', async () => (await metricValue(registry, 'hub_disconnects_total', { reason: 'token_expired' })) === 1);
  });
});

describe('hub protocol edges (raw WebSocket)', () => {
  test('an unsupported protocol gets a handshake error and the socket is closed', async () => {
    const { wsUrl } = await startHubApp();
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${await tokenFor(newUserId())}` } });
    await new Promise((resolve) => ws.once('open', resolve));
    const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
    const closed = new Promise((resolve) => ws.once('close', resolve));
    ws.send(`{"protocol":"xml","version":1}${RS}`);
    assert.match(await reply, /^\{"error":"The protocol 'xml' is not supported\."\}\u001e$/);
    await closed;
  });

  test('several records in one WebSocket message are all handled', async () => {
    const { wsUrl } = await startHubApp();
    const raw = await connectRaw(wsUrl, await tokenFor(newUserId()));
    raw.ws.send(`{"type":6}${RS}{"type":1,"invocationId":"1","target":"A","arguments":[]}${RS}{"type":1,"invocationId":"2","target":"B","arguments":[]}${RS}`);
    await waitFor('two completions', () => raw.records.filter((r) => r.type === 3).length === 2);
    assert.deepEqual(
      raw.records.filter((r) => r.type === 3).map((r) => r.invocationId),
      ['1', '2'],
    );
  });

  test('pings (type 6) are sent at the configured interval to an otherwise idle socket', async () => {
    const interval = 200;
    const { wsUrl } = await startHubApp({ pingIntervalMs: interval, clientTimeoutMs: 60_000 });
    const raw = await connectRaw(wsUrl, await tokenFor(newUserId()));
    const seenAt: number[] = [];
    raw.ws.on('message', () => seenAt.push(performance.now()));
    await waitFor('three pings', () => raw.records.filter((r) => r.type === 6).length >= 3);
    assert.ok(raw.records.every((r) => r.type === 6), 'nothing but pings');
    // Paced by the interval, not by the liveness timer's finer tick (half an interval of allowance
    // for event-loop stalls in a busy test process: server and client share it).
    for (let i = 1; i < seenAt.length; i++) assert.ok(seenAt[i]! - seenAt[i - 1]! >= interval / 2, `gap ${i}`);
  });

  test('a peer that sends nothing past the client timeout is closed', async () => {
    const { wsUrl, registry } = await startHubApp({ clientTimeoutMs: 300, pingIntervalMs: 100 });
    const silent = await connectRaw(wsUrl, await tokenFor(newUserId()));
    // A second peer keeps pinging (as the official client does) and must stay open.
    const chatty = await connectRaw(wsUrl, await tokenFor(newUserId()));
    const keepAlive = setInterval(() => chatty.ws.send(`{"type":6}${RS}`), 50);

    await waitFor('the silent peer to be closed', () => silent.isClosed());
    clearInterval(keepAlive);
    assert.equal(chatty.isClosed(), false, 'the pinging peer is still connected');
    assert.equal(await metricValue(registry, 'hub_disconnects_total', { reason: 'client_timeout' }), 1);
  });

  test('a client that stops reading is closed once its buffer passes the cap, and the metric counts it', async () => {
    const cap = 256 * 1024;
    const { hub, wsUrl, registry } = await startHubApp({ maxBufferedBytes: cap });
    const userId = newUserId();
    const stuck = await connectRaw(wsUrl, await tokenFor(userId));
    // Stop reading: the kernel buffers fill, then the server's userland buffer grows towards the cap.
    (stuck.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const healthyUser = newUserId();
    const healthy = await connectRaw(wsUrl, await tokenFor(healthyUser));

    const chunk = 'x'.repeat(64 * 1024);
    let sent = 0;
    await waitFor(
      'the slow-consumer close',
      async () => {
        for (let i = 0; i < 16; i++) await hub.send(userGroup(userId), 'bulk', { chunk, i: sent++ });
        return (await metricValue(registry, 'hub_slow_consumer_closes_total')) === 1;
      },
      20_000,
    );
    await waitFor('the stuck socket to be dropped', () => hub.connectionCount() === 1);
    assert.equal(await metricValue(registry, 'hub_disconnects_total', { reason: 'slow_consumer' }), 1);

    await hub.send(userGroup(healthyUser), 'still_here', {});
    await waitFor('the healthy client still served', () => healthy.records.some((r) => r.target === 'still_here'));
  });
});
